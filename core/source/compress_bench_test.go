package source

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkCSVCompressed reads a 20 MB CSV file to its end, plain and
// compressed, with the parallel parser (4 goroutines): MB/s are of the
// decompressed bytes, so the compressed runs show what decompressing
// (to the temporary file, before parsing starts) costs next to parsing.
// Paired with the plain run: go test -bench CSVCompressed -count 4.
func BenchmarkCSVCompressed(b *testing.B) {
	content := []byte(genCSV(160_000, 0))
	dir := b.TempDir()
	for _, c := range []Compression{CompressionNone, CompressionGzip, CompressionZstd} {
		name := map[Compression]string{CompressionNone: "in.csv", CompressionGzip: "in.csv.gz", CompressionZstd: "in.csv.zst"}[c]
		p := filepath.Join(dir, name)
		data := content
		if c != CompressionNone {
			data = compressed(b, c, content)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
		b.Run(string(c), func(b *testing.B) {
			b.SetBytes(int64(len(content)))
			b.ReportAllocs()
			for b.Loop() {
				s, err := CSV(p, CSVOptions{Header: true, Columns: genFields, Parallelism: 4}, nil)
				if err != nil {
					b.Fatal(err)
				}
				for {
					bt, err := s.Next(ctx)
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					bt.Release()
				}
				s.Close()
			}
		})
	}
}
