package elastic

// A loaded machine: channels descheduled while they work.
//
// On a machine shared with other work (other processes, other jobs) the
// channels are preempted inside their operators: their throughput in such
// a period understates what the channel count gives on a quiet machine,
// and the time they are not busy is not time spent waiting on the output.
// A window taken then misleads both policies' checks: DS2's check after a
// change up sees the added channels bring nothing and backs off, its
// downstream rule reads idle channels as a bottleneck downstream, and the
// level controller's P5 sees no gain over the level below; the growing
// backlog then sends them up again, a down-and-up cycle per few periods
// (docs/PERFORMANCE-LOG.md, "Elastic controllers on the real runtime").
//
// So a congested window whose channels were descheduled for more than
// starvedShare of their busy time ([Period.Descheduled], thread CPU
// against wall time inside operators) is not judged: the policies hold,
// and DS2 keeps a pending check for a later window. Descheduling that
// lasts 2 × WindowPeriods periods in a row at one count is judged as
// usual: it is what the count gets on this machine (more channel threads
// than cores, or a machine loaded for good), and the checks are what
// take the region back from such a count. Only DS2's downstream bound
// stays off for every descheduled window: channels that are off a CPU
// are not waiting on their output, and on a machine loaded by other
// processes more channel threads may well get more of the CPU (the
// check after the change up then says whether they did).

// starvedShare is the share of their busy time the channels may spend
// descheduled before a window counts as taken on a loaded machine: 20 %.
// Quiet, the channels of examples/elastic lose a few per cent (7 % for 2
// channels on the 2-vCPU VM); on the VM loaded by other builds 2 channels
// lost 39 % while delivering two thirds of their quiet throughput
// (docs/PERFORMANCE-LOG.md, "A loaded machine").
const starvedShare = 0.2

// starvedRun is the count of consecutive periods with the channels
// descheduled more than starvedShare, after period p, given the count
// before it.
func starvedRun(run int, p Period) int {
	if p.Descheduled() > starvedShare {
		return run + 1
	}
	return 0
}

// loaded reports whether a window whose Descheduled statistic is d, after
// run consecutive descheduled periods, counts as taken on a loaded
// machine: d above starvedShare, for fewer than 2 × window periods.
func loaded(d float64, run, window int) bool {
	return d > starvedShare && run < 2*window
}
