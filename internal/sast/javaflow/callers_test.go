package javaflow

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rcamesh/rcamesh/internal/sast/repo"
)

const store = `package app;

public class Store {
    public void find(java.sql.Statement st, String q) throws Exception {
        st.executeQuery("SELECT * FROM t WHERE a='" + q + "'");
    }
}
`

func TestCallersCloseTheParameterUnknown(t *testing.T) {
	cases := []struct {
		name, caller, want string
	}{
		{"a servlet passes a request parameter", `        new Store().find(null, request.getParameter("q"));`, TruePositive},
		{"every caller passes a constant", `        new Store().find(null, "fixed");
        new Store().find(null, "other");`, FalsePositive},
		{"one caller of two passes the request", `        new Store().find(null, "fixed");
        String v = request.getHeader("h");
        new Store().find(null, v);`, TruePositive},
		{"no caller", `        int x = 1;`, NeedsReview},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{"app/Store.java": store, "app/App.java": servlet(tc.caller)}
			for p, c := range files {
				if err := os.MkdirAll(filepath.Join(dir, "app"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r, err := repo.Open(dir, "")
			if err != nil {
				t.Fatal(err)
			}
			a, err := Analyze(context.Background(), NewProgram(r), Target{File: "app/Store.java", StartLine: 5, Category: "sqli"})
			if err != nil {
				t.Fatal(err)
			}
			if a.Verdict != tc.want {
				t.Fatalf("verdict %s (%s), want %s; unknowns %v", a.Verdict, a.Reason, tc.want, a.Unknowns)
			}
			if tc.want == TruePositive {
				var src *Claim
				for i := range a.Claims {
					if a.Claims[i].ID == "source" {
						src = &a.Claims[i]
					}
				}
				if src == nil || src.Steps[0].File != "app/App.java" {
					t.Errorf("the source should be cited in the caller: %+v", a.Claims)
				}
			}
			if tc.want == NeedsReview && len(a.Unknowns) == 0 {
				t.Error("NEEDS_REVIEW without unknowns")
			}
		})
	}
}
