package entryscript

import (
	"io"
	"os"
	"strings"
)

// tailLines is how many lines of stderr a crash report keeps.
const tailLines = 20

// tailFile returns the last lines of path written after offset start,
// reading at most max bytes from its end.
func tailFile(path string, start int64, lines int, limit int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() <= start {
		return ""
	}
	from := max(start, fi.Size()-limit)
	b, err := io.ReadAll(io.NewSectionReader(f, from, fi.Size()-from))
	if err != nil {
		return ""
	}
	text := strings.TrimRight(string(b), "\n")
	all := strings.Split(text, "\n")
	if from > start && len(all) > 1 {
		all = all[1:] // the first line is cut
	}
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
