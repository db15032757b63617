package javaflow

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/sast/repo"
)

// servlet wraps a doPost body in a servlet class of our own writing.
func servlet(body string) string {
	return `package app;

import javax.servlet.http.*;

public class App extends HttpServlet {
    public void doPost(HttpServletRequest request, HttpServletResponse response) throws Exception {
` + body + `
    }
}
`
}

// analyse writes the files into a fresh repository and analyses the
// finding on the line marked "// SINK" of app/App.java.
func analyse(t *testing.T, cat string, files map[string]string) *Analysis {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	line := 0
	for i, l := range strings.Split(files["app/App.java"], "\n") {
		if strings.Contains(l, "// SINK") {
			line = i + 1
		}
	}
	if line == 0 {
		t.Fatal("no // SINK marker")
	}
	r, err := repo.Open(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	a, err := Analyze(context.Background(), NewProgram(r), Target{File: "app/App.java", StartLine: line, Category: cat})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

const param = `        String param = request.getParameter("p");
`

func TestAnalyzeCategories(t *testing.T) {
	cases := []struct {
		name, cat, body, want string
		extra                 map[string]string
	}{
		{"sqli concatenated", "sqli", param + `        java.sql.Statement st = null;
        st.executeQuery("SELECT * FROM t WHERE a='" + param + "'"); // SINK`, TruePositive, nil},
		{"sqli bound parameter", "sqli", param + `        java.sql.Connection c = null;
        java.sql.PreparedStatement ps = c.prepareStatement("SELECT * FROM t WHERE a=?"); // SINK
        ps.setString(1, param);`, FalsePositive, nil},
		{"sqli bound arguments of a template query", "sqli", param + `        org.springframework.jdbc.core.JdbcTemplate jt = null;
        jt.queryForList("SELECT * FROM t WHERE a=?", new Object[] {param}); // SINK`, FalsePositive, nil},
		{"ldapi filter arguments are escaped", "ldapi", param + `        javax.naming.directory.DirContext ctx = null;
        ctx.search("ou=users", "(uid={0})", new Object[] {param}, null); // SINK`, FalsePositive, nil},
		{"sqli map other key", "sqli", param + `        java.util.HashMap<String, Object> m = new java.util.HashMap<>();
        m.put("keyA", "safe");
        m.put("keyB", param);
        String bar = (String) m.get("keyA");
        java.sql.Statement st = null;
        st.execute("SELECT " + bar); // SINK`, FalsePositive, nil},
		{"sqli map tainted key", "sqli", param + `        java.util.HashMap<String, Object> m = new java.util.HashMap<>();
        m.put("keyA", "safe");
        m.put("keyB", param);
        String bar = (String) m.get("keyB");
        java.sql.Statement st = null;
        st.execute("SELECT " + bar); // SINK`, TruePositive, nil},
		{"cmdi list after remove", "cmdi", param + `        java.util.List<String> l = new java.util.ArrayList<>();
        l.add("safe");
        l.add(param);
        l.add("more");
        l.remove(0);
        String bar = l.get(0);
        Runtime.getRuntime().exec("echo " + bar); // SINK`, TruePositive, nil},
		{"cmdi list safe position", "cmdi", param + `        java.util.List<String> l = new java.util.ArrayList<>();
        l.add("safe");
        l.add(param);
        l.add("more");
        l.remove(0);
        String bar = l.get(1);
        Runtime.getRuntime().exec("echo " + bar); // SINK`, FalsePositive, nil},
		{"pathtraver switch folds to tainted", "pathtraver", param + `        String bar;
        String guess = "ABC";
        switch (guess.charAt(1)) {
            case 'A': bar = "a"; break;
            case 'B': bar = param; break;
            default: bar = "d";
        }
        new java.io.File(bar); // SINK`, TruePositive, nil},
		{"pathtraver switch folds to constant", "pathtraver", param + `        String bar;
        String guess = "ABC";
        switch (guess.charAt(2)) {
            case 'A': bar = "a"; break;
            case 'B': bar = param; break;
            default: bar = "d";
        }
        new java.io.File(bar); // SINK`, FalsePositive, nil},
		{"xss ternary folds to tainted", "xss", param + `        int num = 106;
        String bar = (7 * 42) - num > 200 ? "constant" : param;
        response.getWriter().println(bar); // SINK`, TruePositive, nil},
		{"xss ternary folds to constant", "xss", param + `        int num = 86;
        String bar = (7 * 42) - num > 200 ? "constant" : param;
        response.getWriter().println(bar); // SINK`, FalsePositive, nil},
		{"xss encoded", "xss", param + `        String bar = org.owasp.esapi.ESAPI.encoder().encodeForHTML(param);
        response.getWriter().println(bar); // SINK`, FalsePositive, nil},
		{"sqli html-encoding is no SQL sanitiser", "sqli", param + `        String bar = org.owasp.esapi.ESAPI.encoder().encodeForHTML(param);
        java.sql.Statement st = null;
        st.execute("SELECT " + bar); // SINK`, TruePositive, nil},
		{"ldapi if folds", "ldapi", param + `        String bar;
        int num = 196;
        if ((500 / 42) + num > 200) bar = param; else bar = "no";
        javax.naming.directory.DirContext ctx = null;
        ctx.search("ou=users", "(uid=" + bar + ")", null); // SINK`, TruePositive, nil},
		{"ldapi if folds safe", "ldapi", param + `        String bar;
        int num = 86;
        if ((7 * 42) - num > 200) bar = "This should never happen"; else bar = "safe";
        javax.naming.directory.DirContext ctx = null;
        ctx.search("ou=users", "(uid=" + bar + ")", null); // SINK`, FalsePositive, nil},
		{"xpathi builder", "xpathi", param + `        StringBuilder sb = new StringBuilder(param);
        String bar = sb.append("_x").toString();
        javax.xml.xpath.XPath xp = null;
        xp.compile("/a[@id='" + bar + "']").evaluate(null); // SINK`, TruePositive, nil},
		{"xpathi value replaced by a constant on the way", "xpathi", param + `        java.util.List<String> l = new java.util.ArrayList<>();
        l.add(param);
        l.add("safe");
        String bar = l.get(1);
        javax.xml.xpath.XPath xp = null;
        xp.compile("/a[@id='" + bar + "']").evaluate(null); // SINK`, FalsePositive, nil},
		{"trustbound header loop", "trustbound", `        String param = "";
        java.util.Enumeration<String> headers = request.getHeaders("h");
        if (headers != null && headers.hasMoreElements()) { param = headers.nextElement(); }
        request.getSession().setAttribute("user", param); // SINK`, TruePositive, nil},
		{"trustbound constant", "trustbound", `        String param = request.getParameter("p");
        String bar = "fixed";
        request.getSession().setAttribute("user", bar); // SINK`, FalsePositive, nil},
		{"cookie source loop", "sqli", `        String param = "none";
        javax.servlet.http.Cookie[] cs = request.getCookies();
        if (cs != null) {
            for (javax.servlet.http.Cookie c : cs) {
                if (c.getName().equals("x")) { param = java.net.URLDecoder.decode(c.getValue(), "UTF-8"); break; }
            }
        }
        java.sql.Statement st = null;
        st.executeUpdate("DELETE FROM t WHERE a=" + param); // SINK`, TruePositive, nil},
		{"inner helper method", "cmdi", param + `        String bar = doSomething(param);
        Runtime.getRuntime().exec(bar); // SINK
    }
    private static String doSomething(String p) {
        String b = "safe!";
        if (p.length() > 100) b = "other";
        return b;`, FalsePositive, nil},
		{"helper class in another file: safe getter", "pathtraver", `        app.Req r = new app.Req(request);
        String bar = r.getSafe("p");
        new java.io.FileInputStream(bar); // SINK`, FalsePositive, map[string]string{"app/Req.java": reqClass}},
		{"helper class in another file: tainted getter", "pathtraver", `        app.Req r = new app.Req(request);
        String bar = r.getParam("p");
        new java.io.FileInputStream(bar); // SINK`, TruePositive, map[string]string{"app/Req.java": reqClass}},
		{"weakrand java.util.Random", "weakrand", `        long v = new java.util.Random().nextLong(); // SINK`, TruePositive, nil},
		{"weakrand SecureRandom", "weakrand", `        java.security.SecureRandom r = java.security.SecureRandom.getInstance("SHA1PRNG");
        double d = r.nextDouble(); // SINK`, FalsePositive, nil},
		{"hash MD5", "hash", `        java.security.MessageDigest md = java.security.MessageDigest.getInstance("MD5"); // SINK`, TruePositive, nil},
		{"hash SHA-256", "hash", `        java.security.MessageDigest md = java.security.MessageDigest.getInstance("SHA-256"); // SINK`, FalsePositive, nil},
		{"hash from properties: weak", "hash", propsBody("algA", "hash"), TruePositive, map[string]string{"res/cfg.properties": cfg}},
		{"hash from properties: strong", "hash", propsBody("algB", "hash"), FalsePositive, map[string]string{"res/cfg.properties": cfg}},
		{"hash from properties: default applies", "hash", propsBody("missing", "hash"), FalsePositive, map[string]string{"res/cfg.properties": cfg}},
		{"crypto DES", "crypto", `        javax.crypto.Cipher c = javax.crypto.Cipher.getInstance("DES/CBC/PKCS5Padding"); // SINK`, TruePositive, nil},
		{"crypto AES-GCM", "crypto", `        javax.crypto.Cipher c = javax.crypto.Cipher.getInstance("AES/GCM/NoPadding"); // SINK`, FalsePositive, nil},
		{"crypto from properties: weak", "crypto", propsBody("cipherA", "crypto"), TruePositive, map[string]string{"res/cfg.properties": cfg}},
		{"crypto from properties: strong", "crypto", propsBody("cipherB", "crypto"), FalsePositive, map[string]string{"res/cfg.properties": cfg}},
		{"securecookie off", "securecookie", `        javax.servlet.http.Cookie c = new javax.servlet.http.Cookie("k", "v");
        c.setSecure(false);
        response.addCookie(c); // SINK`, TruePositive, nil},
		{"securecookie on", "securecookie", `        javax.servlet.http.Cookie c = new javax.servlet.http.Cookie("k", "v");
        c.setSecure(true);
        response.addCookie(c); // SINK`, FalsePositive, nil},
		{"securecookie never set", "securecookie", `        javax.servlet.http.Cookie c = new javax.servlet.http.Cookie("k", "v");
        response.addCookie(c); // SINK`, TruePositive, nil},
		{"crypto algorithm unknown", "crypto", `        String alg = System.getenv("ALG");
        javax.crypto.Cipher c = javax.crypto.Cipher.getInstance(alg); // SINK`, NeedsReview, nil},
		{"dead sink", "sqli", param + `        if (1 > 2) {
            java.sql.Statement st = null;
            st.execute(param); // SINK
        }`, NeedsReview, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"app/App.java": servlet(tc.body)}
			for k, v := range tc.extra {
				files[k] = v
			}
			a := analyse(t, tc.cat, files)
			if a.Verdict != tc.want {
				t.Fatalf("verdict %s (%s), want %s; claims %+v unknowns %v", a.Verdict, a.Reason, tc.want, a.Claims, a.Unknowns)
			}
			if tc.want != NeedsReview && len(a.Claims) == 0 {
				t.Fatal("a final verdict without claims")
			}
			for _, c := range a.Claims {
				if len(c.Steps) == 0 {
					t.Errorf("claim %s cites nothing", c.ID)
				}
			}
		})
	}
}

const reqClass = `package app;

import javax.servlet.http.HttpServletRequest;

public class Req {
    private HttpServletRequest request;

    public Req(HttpServletRequest request) {
        this.request = request;
    }

    public String getParam(String p) {
        return request.getParameter(p);
    }

    public String getSafe(String p) {
        return "constant";
    }
}
`

const cfg = `# our test configuration
algA=MD5
algB=SHA-512
cipherA=DES/ECB/PKCS5Padding
cipherB=AES/GCM/NoPadding
`

func propsBody(key, cat string) string {
	call := `java.security.MessageDigest.getInstance(alg); // SINK`
	def := "SHA-256"
	if cat == "crypto" {
		call = `javax.crypto.Cipher.getInstance(alg); // SINK`
		def = "AES/GCM/NoPadding"
	}
	return `        java.util.Properties props = new java.util.Properties();
        props.load(App.class.getClassLoader().getResourceAsStream("cfg.properties"));
        String alg = props.getProperty("` + key + `", "` + def + `");
        Object o = ` + call
}

func TestAnalyzeTrailCitesSourceAndSink(t *testing.T) {
	a := analyse(t, "sqli", map[string]string{"app/App.java": servlet(param + `        String sql = "SELECT " + param;
        java.sql.Statement st = null;
        st.execute(sql); // SINK`)})
	if a.Verdict != TruePositive {
		t.Fatalf("verdict %s", a.Verdict)
	}
	var src, path *Claim
	for i := range a.Claims {
		switch a.Claims[i].ID {
		case "source":
			src = &a.Claims[i]
		case "path":
			path = &a.Claims[i]
		}
	}
	if src == nil || path == nil {
		t.Fatalf("claims %+v", a.Claims)
	}
	if src.Steps[0].Line != 7 || !strings.Contains(src.Steps[0].What, "getParameter") {
		t.Errorf("source step %+v, want line 7 getParameter", src.Steps[0])
	}
	last := path.Steps[len(path.Steps)-1]
	if last.Line != 10 {
		t.Errorf("path ends at %+v, want the sink line 10", last)
	}
}

func TestAnalyzeBadTargets(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "A.java"), []byte(servlet("        int x = 1;")), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := repo.Open(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	p := NewProgram(r)
	if _, err := Analyze(context.Background(), p, Target{File: "A.java", StartLine: 500, Category: "sqli"}); err == nil {
		t.Error("a line beyond the file: want an error")
	}
	if _, err := Analyze(context.Background(), p, Target{File: "Nope.java", StartLine: 1, Category: "sqli"}); err == nil {
		t.Error("a missing file: want an error")
	}
	a, err := Analyze(context.Background(), p, Target{File: "A.java", StartLine: 7, Category: "sqli"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Verdict != NeedsReview || len(a.Unknowns) == 0 {
		t.Errorf("no sink at the line: got %s %v, want NEEDS_REVIEW with unknowns", a.Verdict, a.Unknowns)
	}
}
