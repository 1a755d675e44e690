package harness

// This file writes what a benchmark leaves in benchmarks/results:
// DATE-KIND[-LABEL].md with its JSON beside it, and the lines every report
// starts with (date, command, revision, machine), so that each load
// generator says them the same way.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Meta says where and how a run was made; the command fills it in.
type Meta struct {
	Command  string `json:"command"`
	Date     string `json:"date"`
	Host     Host   `json:"host"`
	Revision string `json:"revision"`
}

// NewMeta describes a run of command started at started, by the tool at
// revision, on this machine.
func NewMeta(command string, started time.Time, revision string) Meta {
	return Meta{Command: command, Date: started.Format(time.RFC3339), Host: ThisHost(), Revision: revision}
}

// WriteHeader writes the date, command, revision and machine lines of a
// report, as Markdown list items; revisionNote and machineNote, when not
// empty, go at the end of those two lines.
func (m Meta) WriteHeader(b *strings.Builder, revisionNote, machineNote string) {
	fmt.Fprintf(b, "- date: %s\n", m.Date)
	fmt.Fprintf(b, "- command: `%s`\n", m.Command)
	fmt.Fprintf(b, "- revision: %s%s\n", m.Revision, revisionNote)
	h := m.Host
	fmt.Fprintf(b, "- machine: %d cores (nproc), %s, kernel %s, %s/%s, %s%s\n", h.NumCPU, h.CPU, h.Kernel, h.OS, h.Arch, h.GoVersion, machineNote)
}

// failed is the verdict of a report whose run failed.
const failed = "FAIL (the tool exited non-zero): see Failures."

// WriteVerdict writes a report's verdict paragraph: pass when ok, else that
// the run failed and the tool said so.
func WriteVerdict(b *strings.Builder, ok bool, pass string) {
	if !ok {
		pass = failed
	}
	fmt.Fprintf(b, "%s\n\n", pass)
}

// WriteTables writes a report's Summary and Trials sections: their headings,
// and r's tables as summary and trials write them.
func WriteTables[R any](b *strings.Builder, r R, summary, trials func(io.Writer, R) error) error {
	b.WriteString("## Summary\n\n")
	if err := summary(b, r); err != nil {
		return err
	}
	b.WriteString("\n## Trials\n\n")
	return trials(b, r)
}

// WriteFailures writes a report's Failures section, an item a failure; with
// no failures, nothing.
func WriteFailures(b *strings.Builder, failures []string) {
	if len(failures) == 0 {
		return
	}
	b.WriteString("\n## Failures\n\n")
	for _, f := range failures {
		fmt.Fprintf(b, "- %s\n", f)
	}
}

// Name returns a results file's name without its extension: the date part
// of date (RFC 3339), kind, and label when not empty.
func Name(date, kind, label string) string {
	name := date
	if len(name) > 10 {
		name = name[:10]
	}
	name += "-" + kind
	if label != "" {
		name += "-" + label
	}
	return name
}

// WriteJSON writes v as indented JSON.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Write writes markdown to dir/name.md and v as JSON to dir/name.json,
// making dir if needed, and returns the Markdown file's path.
func Write(dir, name, markdown string, v any) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("results directory %s: %w", dir, err)
	}
	md := filepath.Join(dir, name+".md")
	if err := os.WriteFile(md, []byte(markdown), 0o644); err != nil {
		return "", fmt.Errorf("writing %s: %w", md, err)
	}
	var j strings.Builder
	if err := WriteJSON(&j, v); err != nil {
		return "", fmt.Errorf("encoding %s.json: %w", name, err)
	}
	js := filepath.Join(dir, name+".json")
	if err := os.WriteFile(js, []byte(j.String()), 0o644); err != nil {
		return "", fmt.Errorf("writing %s: %w", js, err)
	}
	return md, nil
}
