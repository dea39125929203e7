// Package check is the report of the `check` subcommand of every binary:
// before serving, each binary validates its configuration with the loaders
// it serves with, probes its upstreams with its collectors' own clients,
// and prints one verdict per endpoint group, each failure with its remedy.
//
// A Report is built by groups of items; Write prints it with every
// configured secret redacted, and Failed says whether serving would leave
// an endpoint without data (the binary then exits 1).
package check

import (
	"fmt"
	"io"
	"strings"

	"github.com/tokendata/tokendata/shared/config"
)

// Status is the verdict of one item.
type Status string

// Verdicts. Only Fail makes the report fail: Warn is served, with the
// warning the API discloses; Skip was not probed because an earlier
// item failed.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "FAIL"
	Skip Status = "skip"
)

// Item is one verdict: what was checked, what was found and, for a
// failure or a warning, what to do.
type Item struct {
	Status Status
	// Subject names what was checked ("getTokenSupply", "token file").
	Subject string
	// Text says what was found.
	Text string
	// Remedy says what to do; for Fail it is required.
	Remedy string
}

// Group is the verdicts of one endpoint group.
type Group struct {
	// Name is the group ("supply", "holders").
	Name string
	// Serves lists the endpoints the group decides.
	Serves string
	Items  []Item
}

// Add appends an item.
func (g *Group) Add(it Item) { g.Items = append(g.Items, it) }

// OK appends a passed item.
func (g *Group) OK(subject, format string, a ...any) {
	g.Add(Item{Status: OK, Subject: subject, Text: fmt.Sprintf(format, a...)})
}

// Warn appends a warning: the endpoint is served, with this disclosed.
func (g *Group) Warn(subject, text, remedy string) {
	g.Add(Item{Status: Warn, Subject: subject, Text: text, Remedy: remedy})
}

// Fail appends a failure and its remedy.
func (g *Group) Fail(subject, text, remedy string) {
	g.Add(Item{Status: Fail, Subject: subject, Text: text, Remedy: remedy})
}

// Skip appends an item that was not probed, and why.
func (g *Group) Skip(subject, why string) { g.Add(Item{Status: Skip, Subject: subject, Text: why}) }

// Failed reports whether one item of the group failed.
func (g *Group) Failed() bool {
	for _, it := range g.Items {
		if it.Status == Fail {
			return true
		}
	}
	return false
}

// Report is the whole check of one binary.
type Report struct {
	// Title is the first line.
	Title  string
	Groups []*Group
	// Paste is a block printed after the groups, as it is (YAML to paste
	// into the token file).
	Paste string
	// Redactor removes every configured secret from the printed text.
	Redactor *config.Redactor
}

// Group returns the group called name, appended when new.
func (r *Report) Group(name, serves string) *Group {
	for _, g := range r.Groups {
		if g.Name == name {
			return g
		}
	}
	g := &Group{Name: name, Serves: serves}
	r.Groups = append(r.Groups, g)
	return g
}

// Failed reports whether one item of the report failed.
func (r *Report) Failed() bool {
	for _, g := range r.Groups {
		if g.Failed() {
			return true
		}
	}
	return false
}

// Counts returns the number of items of each status.
func (r *Report) Counts() map[Status]int {
	n := map[Status]int{}
	for _, g := range r.Groups {
		for _, it := range g.Items {
			n[it.Status]++
		}
	}
	return n
}

// Write prints the report: the title, each group with its endpoints and
// its items (the remedy of each failure and warning under it), the paste
// block, and the verdict. Every line is redacted.
func (r *Report) Write(w io.Writer) error {
	var b strings.Builder
	if r.Title != "" {
		b.WriteString(r.Title + "\n")
	}
	for _, g := range r.Groups {
		b.WriteString("\n" + g.Name)
		if g.Serves != "" {
			b.WriteString(" (" + g.Serves + ")")
		}
		b.WriteString("\n")
		for _, it := range g.Items {
			fmt.Fprintf(&b, "  %-4s  %s: %s\n", it.Status, it.Subject, oneLine(it.Text))
			if it.Remedy != "" && (it.Status == Fail || it.Status == Warn) {
				fmt.Fprintf(&b, "        remedy: %s\n", oneLine(it.Remedy))
			}
		}
	}
	if r.Paste != "" {
		b.WriteString("\n" + strings.TrimRight(r.Paste, "\n") + "\n")
	}
	n := r.Counts()
	b.WriteString("\n")
	if r.Failed() {
		fmt.Fprintf(&b, "verdict: NOT READY: %d failed, %d warnings, %d passed; fix each FAIL above (its remedy says how), then run check again\n",
			n[Fail], n[Warn], n[OK])
	} else {
		fmt.Fprintf(&b, "verdict: ready: every endpoint can be served (%d passed, %d warnings)\n", n[OK], n[Warn])
	}
	_, err := io.WriteString(w, r.Redactor.Redact(b.String()))
	return err
}

// oneLine keeps an item on its line: an upstream's text may hold line
// breaks.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}
