package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"streamd/core/jobfile"
	"streamd/core/plan"
	"streamd/core/runtime"
)

// The control endpoint (--control-addr; docs/CONTROL.md): JSON over HTTP.
// Every command is POST /v1/COMMAND (status also GET), answered with a
// JSON object: {"ok": true, …} or {"error": "…"} with a status code that
// says what went wrong (400 a malformed request, 401 a missing or wrong
// token, 404 an unknown command, 405 a command that takes POST asked with
// another method, 409 a request the job refused, 503 a job not started or
// ended). A refused or malformed request never changes the job. Every
// refusal (409) is recorded as a reconfiguration refused — logged and
// counted by the runtime (runtime.Live.Refuse), whichever layer refused
// it; malformed requests are not.

// controlCommands are the commands, in the order errors list them.
var controlCommands = []string{"status", "scale", "rebalance", "pause-controller", "resume-controller", "checkpoint", "stop", "update"}

// maxControlBody bounds a request's body, bytes.
const maxControlBody = 1 << 20

// controlServer serves the control endpoint of one job.
type controlServer struct {
	srv   *http.Server
	ln    net.Listener
	token string
	job   *plan.Job
	file  *jobfile.File
	live  atomic.Pointer[runtime.Live]
	ended atomic.Bool
	// ready is closed once the job has started or ended: a request that
	// comes before waits for it.
	ready     chan struct{}
	readyOnce sync.Once
}

// controlListenAddr checks --control-addr and --control-token: a bare
// ":port" binds loopback (127.0.0.1), and an address that is not loopback
// is refused unless a token is given (anyone who can reach it could stop
// the job or change its logic).
func controlListenAddr(addr, token string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--control-addr %q: expected host:port or :port (%v)", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if !isLoopback(host) && token == "" {
		return "", fmt.Errorf("--control-addr %s is not a loopback address: anyone who reaches it could stop the job or change its logic, so it needs --control-token (every request must then carry it)", addr)
	}
	return net.JoinHostPort(host, port), nil
}

// isLoopback says whether host names only the local machine: a loopback
// IP, or localhost in any case (host names are case-insensitive).
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// listenControl listens on addr (checked by controlListenAddr) and serves
// until close.
func listenControl(addr, token string, job *plan.Job, f *jobfile.File) (*controlServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--control-addr %s: %w", addr, err)
	}
	s := &controlServer{ln: ln, token: token, job: job, file: f, ready: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/", s.serve)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

func (s *controlServer) addr() string { return s.ln.Addr().String() }

// started gives the server the job's live view (runtime.OnStart).
func (s *controlServer) started(l runtime.Live) {
	s.live.Store(&l)
	s.readyOnce.Do(func() { close(s.ready) })
}

// end marks the job ended: requests are answered 503.
func (s *controlServer) end() {
	s.ended.Store(true)
	s.readyOnce.Do(func() { close(s.ready) })
}

func (s *controlServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s.srv.Shutdown(ctx)
}

// controlReply is a response body.
type controlReply struct {
	OK      bool                     `json:"ok"`
	Error   string                   `json:"error,omitempty"`
	Outcome *runtime.Reconfiguration `json:"outcome,omitempty"`
	Plan    *runtime.Plan            `json:"plan,omitempty"`
	// Rebalance is a rebalance's plan.
	Rebalance *runtime.RebalancePlan `json:"rebalance,omitempty"`
}

// controlArgs is the JSON body of scale, rebalance and stop.
type controlArgs struct {
	Channels  *int     `json:"channels"`
	Target    *float64 `json:"target"`
	Savepoint bool     `json:"savepoint"`
}

func reply(w http.ResponseWriter, code int, r controlReply) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(r)
}

func replyErr(w http.ResponseWriter, code int, format string, args ...any) {
	reply(w, code, controlReply{Error: fmt.Sprintf(format, args...)})
}

func (s *controlServer) serve(w http.ResponseWriter, req *http.Request) {
	if s.token != "" {
		got, ok := bearer(req.Header.Get("Authorization"))
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) != 1 {
			replyErr(w, http.StatusUnauthorized, "missing or wrong token (Authorization: Bearer TOKEN; streamd ctl --token)")
			return
		}
	}
	cmd := strings.TrimPrefix(req.URL.Path, "/v1/")
	known := false
	for _, c := range controlCommands {
		known = known || c == cmd
	}
	if !known {
		replyErr(w, http.StatusNotFound, "unknown command %q (expected one of %s)", cmd, strings.Join(controlCommands, ", "))
		return
	}
	if req.Method != http.MethodPost && !(cmd == "status" && req.Method == http.MethodGet) {
		allow := "POST"
		if cmd == "status" {
			allow = "GET, POST"
		}
		w.Header().Set("Allow", allow)
		replyErr(w, http.StatusMethodNotAllowed, "%s takes %s, not %s", cmd, allow, req.Method)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxControlBody+1))
	if err != nil {
		replyErr(w, http.StatusBadRequest, "read the request: %v", err)
		return
	}
	if len(body) > maxControlBody {
		replyErr(w, http.StatusRequestEntityTooLarge, "request body over %d bytes", maxControlBody)
		return
	}
	select {
	case <-s.ready:
	case <-req.Context().Done():
		replyErr(w, http.StatusServiceUnavailable, "the job has not started")
		return
	}
	lp := s.live.Load()
	if lp == nil || s.ended.Load() {
		replyErr(w, http.StatusServiceUnavailable, "the job is not running")
		return
	}
	l := *lp
	if cmd == "update" {
		s.update(w, req, l, body)
		return
	}
	var args controlArgs
	if len(strings.TrimSpace(string(body))) > 0 {
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&args); err != nil {
			replyErr(w, http.StatusBadRequest, "%s: malformed JSON body: %v", cmd, err)
			return
		}
		end := dec.InputOffset()
		if _, err := dec.Token(); err != io.EOF {
			replyErr(w, http.StatusBadRequest, "%s: malformed JSON body: data after the JSON object, from byte %d on (the body is one object)", cmd, end)
			return
		}
	}
	const reason = "api"
	ctx := req.Context()
	var out runtime.Outcome
	switch cmd {
	case "status":
		p := l.Plan()
		reply(w, http.StatusOK, controlReply{OK: true, Plan: &p})
		return
	case "scale":
		if args.Channels == nil {
			replyErr(w, http.StatusBadRequest, `scale: the body needs "channels": N`)
			return
		}
		out, err = l.Scale(ctx, *args.Channels, reason, map[string]string{"channels": fmt.Sprint(*args.Channels)})
	case "rebalance":
		target := 0.0
		if args.Target != nil {
			if *args.Target < 1 {
				replyErr(w, http.StatusBadRequest, "rebalance: target %g is a skew (max channel load / mean): at least 1", *args.Target)
				return
			}
			target = *args.Target
		}
		var p runtime.RebalancePlan
		p, out, err = l.RebalanceNow(ctx, target, reason)
		if err == nil {
			reply(w, http.StatusOK, controlReply{OK: true, Outcome: &out, Rebalance: &p})
			return
		}
	case "pause-controller":
		out = l.PauseController(reason)
	case "resume-controller":
		out = l.ResumeController(reason)
	case "checkpoint":
		out, err = l.Checkpoint(ctx, reason)
	case "stop":
		out, err = l.Stop(ctx, args.Savepoint, reason)
	}
	s.done(w, out, err)
}

// update: POST /v1/update?operator=NAME, the body the operator's new
// entry (YAML or JSON), checked as the job file's entry is.
func (s *controlServer) update(w http.ResponseWriter, req *http.Request, l runtime.Live, body []byte) {
	name := req.URL.Query().Get("operator")
	if name == "" {
		replyErr(w, http.StatusBadRequest, "update: name the operator (?operator=NAME)")
		return
	}
	const reason = "api"
	inputs := map[string]string{"operator": name}
	if s.file == nil {
		out, err := l.Refuse(runtime.KindUpdate, reason, inputs, fmt.Errorf("update: %w: the job was not built from a job file", plan.ErrRefused))
		s.done(w, out, err)
		return
	}
	def, err := s.file.BuildUpdate(s.job, name, body, "request")
	switch {
	case errors.Is(err, plan.ErrRefused):
		// Refused by the job loader's checks (an unknown operator, a
		// window's size or aggregates changed): recorded as the job's
		// own refusals are.
		out, err := l.Refuse(runtime.KindUpdate, reason, inputs, fmt.Errorf("update %s: %w", name, err))
		s.done(w, out, err)
		return
	case err != nil:
		replyErr(w, http.StatusBadRequest, "update %s: %v", name, err)
		return
	}
	if def.Name != "" {
		// The operator as the job knows it: NAME may be its path.
		name = def.Name
	}
	out, err := l.Update(req.Context(), name, def, string(body), reason)
	s.done(w, out, err)
}

// bearer returns the token of an Authorization header that gives one
// with the Bearer scheme, whose name is case-insensitive (RFC 9110
// section 11.1).
func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimLeft(token, " "), true
}

// done answers a request with its outcome.
func (s *controlServer) done(w http.ResponseWriter, out runtime.Outcome, err error) {
	switch {
	case err == nil:
		reply(w, http.StatusOK, controlReply{OK: true, Outcome: &out})
	case errors.Is(err, plan.ErrRefused), errors.Is(err, runtime.ErrNoRebalance):
		reply(w, http.StatusConflict, controlReply{Error: err.Error(), Outcome: &out})
	case errors.Is(err, runtime.ErrEnded):
		reply(w, http.StatusServiceUnavailable, controlReply{Error: err.Error(), Outcome: &out})
	default:
		reply(w, http.StatusInternalServerError, controlReply{Error: err.Error(), Outcome: &out})
	}
}
