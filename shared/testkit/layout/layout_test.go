// Package layout holds the repository's import rules as a test: which
// binary may link what. They keep the public edge free of the collector
// framework and of the simulator, keep the simulator out of every binary
// but standalone (whose demo mode runs it), keep the test kit and the
// services' test fixtures (edgetest, holderstest) out of every binary,
// keep the rooms of the edge and of the holders collector importing one
// way, and keep the Solana simulator's ledger free of its servers. It
// holds the size rules of the services' and shared code too: no function
// over 100 lines, no package over 3,000.
package layout

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/tokendata/tokendata/"

// repoRoot is the directory of the workspace file (go.work).
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOWORK").Output()
	if err != nil {
		t.Fatalf("go env GOWORK: %v", err)
	}
	w := strings.TrimSpace(string(out))
	if w == "" || w == "off" {
		t.Fatal("these rules span modules: run this test in workspace mode (go.work at the repository root)")
	}
	return filepath.Dir(w)
}

// goList runs go list at the repository root and returns its lines.
func goList(t *testing.T, root string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// fixtures are the services' packages of test fixtures: ordinary
// packages that only tests and hack/bench import. They may import the
// test kit (TestTestKitOnlyInTests), and no binary links them
// (TestBinariesLinkOnlyWhatTheyMay), not even one that links their
// service.
var fixtures = []string{mod + "services/edge/edgetest", mod + "services/holders/holderstest"}

// TestBinariesLinkOnlyWhatTheyMay checks every service binary's full
// dependency list against what it must not link, and against the
// fixtures.
func TestBinariesLinkOnlyWhatTheyMay(t *testing.T) {
	root := repoRoot(t)
	simulator, testkit := mod+"shared/simulator", mod+"shared/testkit"
	forbidden := map[string][]string{
		"edge": {mod + "shared/collector", simulator, testkit,
			mod + "services/supply", mod + "services/market", mod + "services/holders", mod + "services/standalone"},
		"supply":     {simulator, testkit, mod + "services/edge", mod + "services/market", mod + "services/holders", mod + "services/standalone"},
		"market":     {simulator, testkit, mod + "services/edge", mod + "services/supply", mod + "services/holders", mod + "services/standalone"},
		"holders":    {simulator, testkit, mod + "services/edge", mod + "services/supply", mod + "services/market", mod + "services/standalone"},
		"standalone": {testkit},
	}
	for bin, bad := range forbidden {
		deps := goList(t, root, "-deps", "./services/"+bin+"/cmd/"+bin)
		if len(deps) < 10 {
			t.Fatalf("%s: go list -deps gave %d packages; the check would prove nothing", bin, len(deps))
		}
		for _, d := range deps {
			for _, b := range slices.Concat(bad, fixtures) {
				if d == b || strings.HasPrefix(d, b+"/") {
					t.Errorf("the %s binary links %s", bin, d)
				}
			}
		}
	}
}

// TestSharedImportsNoService: the shared module is plumbing and the
// contract; it imports no service, and its production code neither the
// simulator nor the test kit.
func TestSharedImportsNoService(t *testing.T) {
	root := repoRoot(t)
	lines := goList(t, root, "-f", `{{.ImportPath}}: {{join .Imports " "}}`, "./shared/...")
	for _, l := range lines {
		pkg, imports, _ := strings.Cut(l, ": ")
		if strings.HasPrefix(pkg, mod+"shared/simulator") || strings.HasPrefix(pkg, mod+"shared/testkit") {
			continue // modules of their own, with their own rules
		}
		for _, imp := range strings.Fields(imports) {
			if strings.HasPrefix(imp, mod+"services/") || strings.HasPrefix(imp, mod+"shared/simulator") ||
				strings.HasPrefix(imp, mod+"shared/testkit") {
				t.Errorf("%s imports %s", pkg, imp)
			}
		}
	}
}

// TestTestKitOnlyInTests: no package's production code imports the test
// kit (test files may, and the fixtures, which no binary links).
func TestTestKitOnlyInTests(t *testing.T) {
	root := repoRoot(t)
	for _, dir := range goList(t, root, "-m", "-f", "{{.Dir}}") { // every module of the workspace
		for _, l := range goList(t, root, "-f", `{{.ImportPath}}: {{join .Imports " "}}`, dir+"/...") {
			pkg, imports, _ := strings.Cut(l, ": ")
			if strings.HasPrefix(pkg, mod+"shared/testkit") || slices.Contains(fixtures, pkg) {
				continue
			}
			for _, imp := range strings.Fields(imports) {
				if strings.HasPrefix(imp, mod+"shared/testkit") {
					t.Errorf("%s (non-test code) imports %s", pkg, imp)
				}
			}
		}
	}
}

// TestEdgeRenderingImportsNoServerNorStore: the edge's rendering (the
// view, its charts and the answers it renders, and the stream of changes
// made of them) is a function of the documents, the status records, the
// history, the token and the clock; which answer a request gets
// (services/edge/conneg) is a function of its header fields.
// None of this project's packages it links imports net/http, and it
// links neither Gin nor the store nor a Redis client at all: the web
// layer and the reading of Redis are rooms of their own. (A library may
// link net/http for its own helpers: brotli does.)
func TestEdgeRenderingImportsNoServerNorStore(t *testing.T) {
	root := repoRoot(t)
	edge := mod + "services/edge"
	rooms := []string{edge + "/view", edge + "/view/chart", edge + "/view/crosscheck", edge + "/answer", edge + "/events", edge + "/conneg"}
	linked := []string{"github.com/gin-gonic/gin", mod + "shared/store", "github.com/redis/go-redis/v9", mod + "services/edge/serve", mod + "services/edge/mirror"}
	for _, room := range rooms {
		lines := goList(t, root, "-deps", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, room)
		if len(lines) < 5 || !strings.HasPrefix(lines[len(lines)-1], room+": ") {
			t.Fatalf("%s: go list -deps gave %v; the check would prove nothing", room, lines)
		}
		for _, l := range lines {
			pkg, imports, _ := strings.Cut(l, ": ")
			for _, b := range linked {
				if pkg == b || strings.HasPrefix(pkg, b+"/") {
					t.Errorf("%s links %s", room, pkg)
				}
			}
			if !strings.HasPrefix(pkg, mod) {
				continue
			}
			for _, imp := range strings.Fields(imports) {
				if imp == "net/http" || strings.HasPrefix(imp, "net/http/") {
					t.Errorf("%s, linked by %s, imports %s", pkg, room, imp)
				}
			}
		}
	}
}

// TestEdgeSnapshotLinksNoOtherRoom: the edge's snapshot
// (services/edge/snapshot) is what the mirror builds from the store and
// the view renders: the documents, the status records, the history, the
// store's health. It links none of the edge's other rooms (the view,
// which imports it, the answers, the events, the mirror, the server, the
// wiring), neither Gin nor the store nor a Redis client, and none of
// this project's packages it links imports net/http.
func TestEdgeSnapshotLinksNoOtherRoom(t *testing.T) {
	root := repoRoot(t)
	edge := mod + "services/edge"
	room := edge + "/snapshot"
	linked := []string{edge + "/view", edge + "/answer", edge + "/events", edge + "/mirror", edge + "/serve",
		"github.com/gin-gonic/gin", mod + "shared/store", "github.com/redis/go-redis/v9"}
	lines := goList(t, root, "-deps", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, room)
	if len(lines) < 5 || !strings.HasPrefix(lines[len(lines)-1], room+": ") {
		t.Fatalf("%s: go list -deps gave %v; the check would prove nothing", room, lines)
	}
	for _, l := range lines {
		pkg, imports, _ := strings.Cut(l, ": ")
		if pkg == edge {
			t.Errorf("%s links the wiring, %s", room, pkg)
		}
		for _, b := range linked {
			if pkg == b || strings.HasPrefix(pkg, b+"/") {
				t.Errorf("%s links %s", room, pkg)
			}
		}
		if !strings.HasPrefix(pkg, mod) {
			continue
		}
		for _, imp := range strings.Fields(imports) {
			if imp == "net/http" || strings.HasPrefix(imp, "net/http/") {
				t.Errorf("%s, linked by %s, imports %s", pkg, room, imp)
			}
		}
	}
}

// TestEdgeServerLinksNoStore: the edge's server (services/edge/serve)
// answers from the current view its source hands it; it links neither
// the store, nor a Redis client, nor the mirror that reads them.
func TestEdgeServerLinksNoStore(t *testing.T) {
	root := repoRoot(t)
	room := mod + "services/edge/serve"
	linked := []string{mod + "shared/store", "github.com/redis/go-redis/v9", mod + "services/edge/mirror"}
	lines := goList(t, root, "-deps", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, room)
	if len(lines) < 5 || !strings.HasPrefix(lines[len(lines)-1], room+": ") {
		t.Fatalf("%s: go list -deps gave %v; the check would prove nothing", room, lines)
	}
	for _, l := range lines {
		pkg, _, _ := strings.Cut(l, ": ")
		for _, b := range linked {
			if pkg == b || strings.HasPrefix(pkg, b+"/") {
				t.Errorf("%s links %s", room, pkg)
			}
		}
	}
}

// TestEdgeMirrorImportsNoHTTP: the edge's mirror of the store
// (services/edge/mirror) reads the store and publishes views; it imports
// neither net/http nor Gin itself, and links neither Gin nor the server.
// (It links net/http through shared/ops, whose handler serves /metrics.)
func TestEdgeMirrorImportsNoHTTP(t *testing.T) {
	root := repoRoot(t)
	room := mod + "services/edge/mirror"
	lines := goList(t, root, "-deps", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, room)
	if len(lines) < 5 || !strings.HasPrefix(lines[len(lines)-1], room+": ") {
		t.Fatalf("%s: go list -deps gave %v; the check would prove nothing", room, lines)
	}
	for _, l := range lines {
		pkg, imports, _ := strings.Cut(l, ": ")
		for _, b := range []string{"github.com/gin-gonic/gin", mod + "services/edge/serve"} {
			if pkg == b || strings.HasPrefix(pkg, b+"/") {
				t.Errorf("%s links %s", room, pkg)
			}
		}
		if pkg != room && !strings.HasPrefix(pkg, room+"/") {
			continue
		}
		for _, imp := range strings.Fields(imports) {
			if imp == "net/http" || strings.HasPrefix(imp, "net/http/") || imp == "github.com/gin-gonic/gin" || strings.HasPrefix(imp, "github.com/gin-gonic/gin/") {
				t.Errorf("%s imports %s", pkg, imp)
			}
		}
	}
}

// TestHoldersRoomsLinkOneWay: the holders collector's rooms import one
// way, the collector (services/holders) → services/holders/follow →
// services/holders/wire → services/holders/tally. The tallies and the
// wire count and decode what the collector reads: they link no network
// (net, net/http, a WebSocket or PubSub client), neither the store nor a
// Redis client, neither the collector framework nor the Prometheus
// client, and neither the follower nor the collector; the follower does
// not link the collector.
func TestHoldersRoomsLinkOneWay(t *testing.T) {
	root := repoRoot(t)
	holders := mod + "services/holders"
	tally, wire, follow := holders+"/tally", holders+"/wire", holders+"/follow"
	plumbing := []string{"net", "net/http", "github.com/gorilla/websocket", mod + "shared/pubsub",
		mod + "shared/store", "github.com/redis/go-redis/v9", mod + "shared/collector", "github.com/prometheus/client_golang"}
	for _, r := range []struct {
		room string
		// linked are never linked, nor the packages below them (below
		// net, its parsers net/url and net/netip are no network).
		linked []string
	}{
		{tally, slices.Concat(plumbing, []string{wire, follow})},
		{wire, slices.Concat(plumbing, []string{follow})},
		{follow, nil},
	} {
		deps := goList(t, root, "-deps", r.room)
		if len(deps) < 5 || deps[len(deps)-1] != r.room {
			t.Fatalf("%s: go list -deps gave %v; the check would prove nothing", r.room, deps)
		}
		for _, pkg := range deps {
			// the collector, and its binary, import every room
			if pkg == holders || strings.HasPrefix(pkg, holders+"/cmd/") {
				t.Errorf("%s links the collector, %s", r.room, pkg)
			}
			for _, b := range r.linked {
				if pkg == b || (b != "net" && strings.HasPrefix(pkg, b+"/")) {
					t.Errorf("%s links %s", r.room, pkg)
				}
			}
		}
	}
}

// goFiles calls f with every non-test Go file under services/ and
// shared/ (testdata and vendor directories skipped), by its path from
// the repository root.
func goFiles(t *testing.T, root string, f func(rel string)) {
	t.Helper()
	for _, top := range []string{"services", "shared"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" || d.Name() == "vendor" {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(d.Name(), ".go") && !strings.HasSuffix(d.Name(), "_test.go") {
				rel, err := filepath.Rel(root, path)
				if err != nil {
					return err
				}
				f(rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestNoFunctionOver100Lines: no function of the services' and shared
// code (tests aside) is longer than 100 lines, from its func line to its
// closing brace; a longer one is split into the steps it is made of.
func TestNoFunctionOver100Lines(t *testing.T) {
	const most = 100
	root := repoRoot(t)
	fset := token.NewFileSet()
	n := 0
	goFiles(t, root, func(rel string) {
		file, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			n++
			start, end := fset.Position(fn.Pos()), fset.Position(fn.Body.Rbrace)
			if lines := end.Line - start.Line + 1; lines > most {
				t.Errorf("%s:%d: %s is %d lines (at most %d)", rel, start.Line, fn.Name.Name, lines, most)
			}
		}
	})
	if n < 100 {
		t.Fatalf("found %d functions; the check would prove nothing", n)
	}
}

// TestNoPackageOver3000Lines: no directory under services/ and shared/
// holds more than 3,000 lines of non-test Go; a larger package is split
// into rooms.
func TestNoPackageOver3000Lines(t *testing.T) {
	const most = 3000
	root := repoRoot(t)
	lines := map[string]int{}
	goFiles(t, root, func(rel string) {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		lines[filepath.Dir(rel)] += bytes.Count(b, []byte("\n"))
	})
	if len(lines) < 10 {
		t.Fatalf("found %d directories; the check would prove nothing", len(lines))
	}
	for _, dir := range slices.Sorted(maps.Keys(lines)) {
		if lines[dir] > most {
			t.Errorf("%s: %d lines of non-test Go (at most %d)", dir, lines[dir], most)
		}
	}
}

// TestSimulatorLedgerLinksNoServer: the Solana simulator's ledger
// (shared/simulator/solanasim/ledger: the tokens, holders, slot, history
// and change signal) is the state its servers serve; it links no network
// (net, net/http, a WebSocket), neither solanasim, whose RPC, PubSub,
// nodes and control endpoint import it, nor the simulator package above
// them: solanasim → ledger, never back.
func TestSimulatorLedgerLinksNoServer(t *testing.T) {
	root := repoRoot(t)
	solanasim := mod + "shared/simulator/solanasim"
	room := solanasim + "/ledger"
	deps := goList(t, root, "-deps", room)
	if len(deps) < 5 || deps[len(deps)-1] != room {
		t.Fatalf("%s: go list -deps gave %v; the check would prove nothing", room, deps)
	}
	for _, l := range []struct {
		pkg   string
		below bool // the packages below it too (below net, its parsers net/url and net/netip are no network)
	}{
		{"net", false}, {"net/http", true}, {"github.com/gorilla/websocket", true},
		{solanasim, false}, {mod + "shared/simulator", false},
	} {
		for _, pkg := range deps {
			if pkg == l.pkg || l.below && strings.HasPrefix(pkg, l.pkg+"/") {
				t.Errorf("%s links %s", room, pkg)
			}
		}
	}
}
