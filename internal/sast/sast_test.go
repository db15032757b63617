package sast

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	criticv1 "github.com/rcamesh/rcamesh/gen/rcamesh/critic/v1"
	"github.com/rcamesh/rcamesh/internal/sast/javaflow"
	"github.com/rcamesh/rcamesh/internal/sast/repo"
	"github.com/rcamesh/rcamesh/internal/sast/sasttest"
)

const app = `package app;

import javax.servlet.http.*;

public class App extends HttpServlet {
    public void doPost(HttpServletRequest request, HttpServletResponse response) throws Exception {
        String param = request.getParameter("p");
        java.sql.Statement st = null;
        st.executeQuery("SELECT " + param);
        String safe = "x";
        st.executeQuery("SELECT " + safe);
    }
}
`

func sarifDoc(results ...string) []byte {
	return []byte(`{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"t","rules":[{"id":"sql","properties":{"tags":["security","CWE-89"]}}]}},"results":[` +
		strings.Join(results, ",") + `]}]}`)
}

func result(file string, line int) string {
	return fmt.Sprintf(`{"ruleId":"sql","message":{"text":"m"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":%q},"region":{"startLine":%d}}}]}`, file, line)
}

// newTriager triages r with the critic's evaluator reached over gRPC.
func newTriager(t testing.TB, r *repo.Repo) *Triager {
	t.Helper()
	return NewTriager(r, &CriticEvaluator{Client: sasttest.Critic(t, r.Root(), nil)}, nil)
}

func newRepo(t *testing.T, files map[string]string) *repo.Repo {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := repo.Open(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestTriageBadInputOthersGoOn(t *testing.T) {
	r := newRepo(t, map[string]string{"app/App.java": app, "big/Big.java": strings.Repeat("// x\n", 1000)})
	r.MaxBytes = 2000
	doc := sarifDoc(result("app/App.java", 9), result("app/Missing.java", 3), result("app/App.java", 400),
		result("../../etc/passwd", 1), result("big/Big.java", 2), `{"ruleId":"sql","message":{"text":"no location"}}`, result("app/App.java", 11))
	fs, err := ParseSARIF(doc)
	if err != nil {
		t.Fatal(err)
	}
	rs := newTriager(t, r).Run(context.Background(), fs)
	want := []struct{ verdict, err string }{
		{javaflow.TruePositive, ""},
		{javaflow.NeedsReview, "file not found"},
		{javaflow.NeedsReview, "beyond the end"},
		{javaflow.NeedsReview, "outside the repository"},
		{javaflow.NeedsReview, "too large"},
		{javaflow.NeedsReview, "no file location"},
		{javaflow.FalsePositive, ""},
	}
	for i, w := range want {
		if rs[i].Verdict != w.verdict || !strings.Contains(rs[i].Error, w.err) || (w.err == "" && rs[i].Error != "") {
			t.Errorf("finding %d: %s %q, want %s with error containing %q", i, rs[i].Verdict, rs[i].Error, w.verdict, w.err)
		}
	}
}

func TestParseSARIFErrors(t *testing.T) {
	for _, tc := range []struct{ name, doc string }{
		{"not json", "{"},
		{"wrong version", `{"version":"1.0.0","runs":[]}`},
		{"no runs", `{"version":"2.1.0"}`},
	} {
		if _, err := ParseSARIF([]byte(tc.doc)); !errors.Is(err, ErrSARIF) {
			t.Errorf("%s: err %v, want ErrSARIF", tc.name, err)
		}
	}
	fs, err := ParseSARIF(sarifDoc(result("a.java", 3)))
	if err != nil || len(fs) != 1 || fs[0].Category != "sqli" || fs[0].CWEs[0] != 89 {
		t.Fatalf("%+v %v", fs, err)
	}
}

func FuzzSARIF(f *testing.F) {
	f.Add(sarifDoc(result("app/App.java", 9)))
	f.Add([]byte(`{"version":"2.1.0","runs":[{"results":[{"ruleIndex":5,"locations":[{}]}]}]}`))
	f.Add([]byte(`{"runs":[{"tool":{"driver":{"rules":[{"id":"x","properties":{"cwe":["CWE-22",7]}}]}},"results":[{"ruleIndex":0}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fs, err := ParseSARIF(b)
		if err != nil {
			return
		}
		for _, x := range fs {
			if x.Err == "" && (x.File == "" || x.StartLine < 1) {
				t.Fatalf("finding without location and without error: %+v", x)
			}
		}
		if _, err := AnnotateSARIF(b, nil); err != nil {
			t.Fatalf("annotate a parsed document: %v", err)
		}
	})
}

func TestAnnotateSARIF(t *testing.T) {
	r := newRepo(t, map[string]string{"app/App.java": app})
	doc := sarifDoc(result("app/App.java", 9), result("app/App.java", 11))
	fs, _ := ParseSARIF(doc)
	rs := newTriager(t, r).Run(context.Background(), fs)
	out, err := AnnotateSARIF(doc, rs)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Runs []struct {
			Results []struct {
				Suppressions []struct{ Kind, Status, Justification string }
				Properties   map[string]any
			}
		}
	}
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatal(err)
	}
	res := d.Runs[0].Results
	if len(res[0].Suppressions) != 0 || res[0].Properties["rcamesh/verdict"] != javaflow.TruePositive {
		t.Errorf("true positive: %+v", res[0])
	}
	if len(res[1].Suppressions) != 1 || res[1].Suppressions[0].Status != "accepted" || !strings.Contains(res[1].Suppressions[0].Justification, "false positive") ||
		res[1].Properties["rcamesh/verdict"] != javaflow.FalsePositive {
		t.Errorf("false positive: %+v", res[1])
	}
	md := Markdown(rs)
	if !strings.Contains(md, "TRUE_POSITIVE") || !strings.Contains(md, `st.executeQuery("SELECT " + param);`) {
		t.Errorf("markdown lacks the verdict or the cited code:\n%s", md)
	}
}

func goodPackage(t *testing.T, tools *Tools) Package {
	t.Helper()
	src, err := tools.Cite("app/App.java", 7, 7, "source")
	if err != nil {
		t.Fatal(err)
	}
	sink, _ := tools.Cite("app/App.java", 9, 9, "sink")
	src.ID, sink.ID = "E1", "E2"
	return Package{Category: "sqli", Verdict: javaflow.TruePositive, Evidence: []Citation{src, sink}, Claims: []Claim{
		{ID: "source", Text: "from the request", Status: "supported", Evidence: []string{"E1"}},
		{ID: "path", Text: "reaches", Status: "supported", Evidence: []string{"E1", "E2"}},
		{ID: "sanitiser", Text: "none", Status: "supported", Evidence: []string{"E2"}},
	}}
}

func TestEvaluatorRejections(t *testing.T) {
	r := newRepo(t, map[string]string{"app/App.java": app})
	tools := NewTools(r, javaflow.NewProgram(r))
	ev := &CriticEvaluator{Client: sasttest.Critic(t, r.Root(), nil)}
	ctx := context.Background()
	if v, err := ev.Evaluate(ctx, r.Root(), goodPackage(t, tools), nil); err != nil || !v.Passed {
		t.Fatalf("a sound package was rejected: %v", v.Reject.BlockingGaps)
	}
	cases := []struct {
		name   string
		mutate func(*Package)
		gap    string
	}{
		{"snippet not the raw code", func(p *Package) { p.Evidence[1].Snippet = "st.executeQuery(safe);" }, "not the raw code"},
		{"lines beyond the file", func(p *Package) { p.Evidence[0].StartLine, p.Evidence[0].EndLine = 90, 91 }, "are not in"},
		{"tentative claim", func(p *Package) { p.Claims[0].Status = "tentative" }, "tentative"},
		{"claim without code", func(p *Package) { p.Claims[1].Evidence = nil }, "cites no code"},
		{"missing checklist item", func(p *Package) { p.Claims = p.Claims[:2] }, "sanitised or replaced"},
		{"source not shown", func(p *Package) { p.Claims[0].Evidence = []string{"E2"} }, "attacker-controlled"},
		{"open unknown", func(p *Package) { p.Unknowns = []string{"who calls doPost"} }, "open unknown"},
		{"not final", func(p *Package) { p.Verdict = javaflow.NeedsReview }, "not a final verdict"},
		{"unknown category", func(p *Package) { p.Category = "nope" }, "no checklist"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := goodPackage(t, tools)
			tc.mutate(&p)
			v, err := ev.Evaluate(ctx, r.Root(), p, nil)
			if err != nil {
				t.Fatal(err)
			}
			if v.Passed {
				t.Fatal("passed")
			}
			if !strings.Contains(strings.Join(v.Reject.BlockingGaps, "|"), tc.gap) {
				t.Errorf("gaps %v, want one with %q", v.Reject.BlockingGaps, tc.gap)
			}
		})
	}
}

// scripted is an analyst whose moves are fixed, to drive the breakers.
type scripted struct {
	calls int
	move  func(ctx context.Context, st *State, n int) (Package, error)
}

func (s *scripted) Analyse(ctx context.Context, st *State) (Package, error) {
	s.calls++
	return s.move(ctx, st, s.calls)
}

func TestLoopBreakers(t *testing.T) {
	r := newRepo(t, map[string]string{"app/App.java": app + strings.Repeat("// pad\n", 100)})
	f := Finding{RuleID: "sql", File: "app/App.java", StartLine: 9, Category: "sqli"}
	cases := []struct {
		name      string
		move      func(ctx context.Context, st *State, n int) (Package, error)
		stop      string
		verdict   string
		minCalls  int
		rejection int
	}{
		{"evaluator rejects the same gaps three times", func(_ context.Context, st *State, _ int) (Package, error) {
			p := goodPackage(t, st.Tools)
			p.Claims = p.Claims[:1]
			return p, nil
		}, "evaluator_rejections", javaflow.NeedsReview, 0, 3},
		{"stagnation: retrievals add nothing", func(ctx context.Context, st *State, _ int) (Package, error) {
			_, _ = st.Tools.FetchCode(ctx, "app/App.java:9-9")
			return Package{}, errRetrieve
		}, "stagnation", javaflow.NeedsReview, 3, 0},
		{"iteration cap: new evidence every time, never a verdict", func(ctx context.Context, st *State, n int) (Package, error) {
			_, _ = st.Tools.FetchCode(ctx, fmt.Sprintf("app/App.java:%d-%d", 10+n, 10+n))
			return Package{}, errRetrieve
		}, "iteration_cap", javaflow.NeedsReview, 8, 0},
		{"rejections that each progress (new code, other gaps) do not reach the limit", func(ctx context.Context, st *State, n int) (Package, error) {
			p := goodPackage(t, st.Tools)
			drop := 1 + n%2 // path, then sanitiser, then path...
			p.Claims = append(p.Claims[:drop:drop], p.Claims[drop+1:]...)
			for i := 0; i < n; i++ { // one more citation each time
				c, _ := st.Tools.Cite("app/App.java", 10+i, 10+i, "more")
				c.ID = fmt.Sprintf("X%d", i)
				p.Evidence = append(p.Evidence, c)
			}
			return p, nil
		}, "iteration_cap", javaflow.NeedsReview, 0, 8},
		{"evaluator passes a sound package", func(_ context.Context, st *State, _ int) (Package, error) {
			return goodPackage(t, st.Tools), nil
		}, "evaluator_passed", javaflow.TruePositive, 0, 0},
		{"rejection history reaches the analyst and it corrects", func(_ context.Context, st *State, n int) (Package, error) {
			p := goodPackage(t, st.Tools)
			if len(st.History) == 0 {
				p.Evidence[1].Snippet = "forged"
			}
			return p, nil
		}, "evaluator_passed", javaflow.TruePositive, 0, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTriager(t, r)
			tr.Analyst = &scripted{move: tc.move}
			tr.Limits.MaxToolCalls = 100
			res := tr.One(context.Background(), f)
			if res.StopReason != tc.stop || res.Verdict != tc.verdict {
				t.Fatalf("stop %s verdict %s, want %s %s (%s)", res.StopReason, res.Verdict, tc.stop, tc.verdict, res.Error)
			}
			if res.Cost.ToolCalls < tc.minCalls {
				t.Errorf("tool calls %d < %d", res.Cost.ToolCalls, tc.minCalls)
			}
			if len(res.Rejections) != tc.rejection {
				t.Errorf("rejections %d, want %d", len(res.Rejections), tc.rejection)
			}
			if tc.verdict == javaflow.NeedsReview && len(res.Unknowns) == 0 && tc.rejection > 0 {
				t.Error("NEEDS_REVIEW without the remaining unknowns")
			}
		})
	}
	t.Run("critic down: retried, then the finding fails visibly", func(t *testing.T) {
		lis := bufconn.Listen(1 << 10)
		lis.Close()
		cc, err := grpc.NewClient("passthrough:///down", grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
			grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		tr := NewTriager(r, &CriticEvaluator{Client: criticv1.NewCriticServiceClient(cc), Attempts: 2, Backoff: time.Millisecond}, nil)
		res := tr.One(context.Background(), f)
		if res.Verdict != javaflow.NeedsReview || res.StopReason != "error" || !strings.Contains(res.Error, "evaluator (critic)") {
			t.Fatalf("verdict %s stop %s error %q", res.Verdict, res.StopReason, res.Error)
		}
		if len(res.Evidence) == 0 {
			t.Error("the evidence gathered before the failure was lost")
		}
	})
	t.Run("wall time", func(t *testing.T) {
		tr := newTriager(t, r)
		tr.Limits.MaxWall = 20 * time.Millisecond
		tr.Analyst = &scripted{move: func(ctx context.Context, st *State, n int) (Package, error) {
			<-ctx.Done() // an analyst (a slow model) still working when the finding's time is up
			return Package{}, errRetrieve
		}}
		res := tr.One(context.Background(), f)
		if res.StopReason != "wall_time" || res.Verdict != javaflow.NeedsReview {
			t.Fatalf("stop %s verdict %s, want wall_time NEEDS_REVIEW", res.StopReason, res.Verdict)
		}
	})
	t.Run("tool-call cap", func(t *testing.T) {
		tr := newTriager(t, r)
		tr.Limits.MaxToolCalls = 3
		tr.Analyst = &scripted{move: func(ctx context.Context, st *State, n int) (Package, error) {
			_, _ = st.Tools.SearchCodebase(ctx, "executeQuery", "")
			_, _ = st.Tools.ListFiles(ctx, "", "*.java")
			return Package{}, errRetrieve
		}}
		res := tr.One(context.Background(), f)
		if res.StopReason != "tool_call_cap" && res.StopReason != "stagnation" {
			t.Fatalf("stop %s", res.StopReason)
		}
		if res.StopReason != "tool_call_cap" {
			t.Errorf("stop %s, want tool_call_cap", res.StopReason)
		}
	})
}

func TestCodeTools(t *testing.T) {
	r := newRepo(t, map[string]string{"app/App.java": app, "app/util/Helper.java": "package app.util;\n\npublic class Helper {\n    public static String clean(String s) {\n        return s.trim();\n    }\n}\n", "res/a.properties": "k=v\n"})
	tools := NewTools(r, javaflow.NewProgram(r))
	ctx := context.Background()
	fs, err := tools.ListFiles(ctx, "app", "*.java")
	if err != nil || len(fs) != 2 {
		t.Fatalf("list_files: %v %v", fs, err)
	}
	ms, err := tools.SearchCodebase(ctx, `executeQuery\(`, "*.java")
	if err != nil || len(ms) != 2 || ms[0].Line != 9 {
		t.Fatalf("search_codebase: %+v %v", ms, err)
	}
	c, err := tools.FetchCode(ctx, "Helper.clean")
	if err != nil || c.File != "app/util/Helper.java" || c.StartLine != 4 || c.EndLine != 6 {
		t.Fatalf("fetch_code symbol: %+v %v", c, err)
	}
	c, err = tools.FetchCode(ctx, "app/App.java:7-9")
	if err != nil || !strings.HasPrefix(strings.TrimSpace(c.Text), `String param = request.getParameter("p");`) {
		t.Fatalf("fetch_code lines: %+v %v", c, err)
	}
	if _, err := tools.FetchCode(ctx, "../outside.java:1-2"); !errors.Is(err, repo.ErrOutside) {
		t.Errorf("outside the root: %v", err)
	}
	if _, err := tools.FetchCode(ctx, "Nothing.here"); err == nil {
		t.Error("unknown symbol: want an error")
	}
	if tools.Calls != 6 {
		t.Errorf("calls %d, want 6", tools.Calls)
	}
}

// TestRunParallelSharedFiles triages many findings over the same files with
// several workers (run under -race in CI): every worker parses its own
// trees, and verdicts do not depend on the schedule.
func TestRunParallelSharedFiles(t *testing.T) {
	r := newRepo(t, map[string]string{"app/App.java": app})
	var results []string
	for i := 0; i < 24; i++ {
		line := 9
		if i%2 == 1 {
			line = 11
		}
		results = append(results, result("app/App.java", line))
	}
	fs, err := ParseSARIF(sarifDoc(results...))
	if err != nil {
		t.Fatal(err)
	}
	tr := newTriager(t, r)
	tr.Parallel = 4
	for i, res := range tr.Run(context.Background(), fs) {
		want := javaflow.TruePositive
		if i%2 == 1 {
			want = javaflow.FalsePositive
		}
		if res.Verdict != want {
			t.Errorf("finding %d: %s, want %s", i, res.Verdict, want)
		}
	}
}
