package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// WebhookSourceDefault is the source name of POST /api/v4/alerts.
const WebhookSourceDefault = "default"

// webhookFile is the -auth.webhooks-file format:
//
//	sources:
//	  alertmanager:                  # POST /api/v4/alerts/alertmanager
//	    bearer_token_file: /run/secrets/am-webhook      # Authorization: Bearer (Alertmanager http_config.authorization, Grafana, Datadog custom header)
//	  grafana:
//	    basic_auth: {username: grafana, password_file: /run/secrets/grafana-webhook}   # Alertmanager/Grafana basic_auth
//	  pagerduty:
//	    pagerduty_signing_secret_file: /run/secrets/pd  # X-PagerDuty-Signature: v1=HMAC-SHA256(body)
//	  default: ...                   # POST /api/v4/alerts
type webhookFile struct {
	Sources map[string]struct {
		BearerTokenFile   string `yaml:"bearer_token_file"`
		BearerTokenSHA256 string `yaml:"bearer_token_sha256"`
		BasicAuth         *struct {
			Username     string `yaml:"username"`
			PasswordFile string `yaml:"password_file"`
		} `yaml:"basic_auth"`
		PagerDutySigningSecretFile string `yaml:"pagerduty_signing_secret_file"`
	} `yaml:"sources"`
}

type webhookSource struct {
	bearer    []byte // sha256 of the token
	basicUser string
	basicPass []byte // sha256 of the password
	pdSecret  []byte
}

var sourceName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

func readSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := strings.TrimSpace(string(b))
	if len(s) < 16 {
		return nil, fmt.Errorf("the secret in %s is shorter than 16 characters", path)
	}
	return []byte(s), nil
}

func loadWebhooks(path string) (map[string]*webhookSource, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth: -auth.webhooks-file: %w", err)
	}
	var f webhookFile
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("auth: -auth.webhooks-file %s: %w", path, err)
	}
	out := map[string]*webhookSource{}
	for name, s := range f.Sources {
		where := fmt.Sprintf("auth: -auth.webhooks-file %s: source %q", path, name)
		if !sourceName.MatchString(name) {
			return nil, fmt.Errorf("%s: a source name is 1-64 of A-Za-z0-9._-", where)
		}
		ws := &webhookSource{}
		if s.BearerTokenFile != "" && s.BearerTokenSHA256 != "" {
			return nil, fmt.Errorf("%s: bearer_token_file or bearer_token_sha256, not both", where)
		}
		if s.BearerTokenFile != "" {
			tok, err := readSecret(s.BearerTokenFile)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			h := sha256.Sum256(tok)
			ws.bearer = h[:]
		}
		if s.BearerTokenSHA256 != "" {
			b, err := hex.DecodeString(strings.TrimPrefix(s.BearerTokenSHA256, "sha256:"))
			if err != nil || len(b) != 32 {
				return nil, fmt.Errorf("%s: bearer_token_sha256 wants 64 hex digits", where)
			}
			ws.bearer = b
		}
		if s.BasicAuth != nil {
			if s.BasicAuth.Username == "" || s.BasicAuth.PasswordFile == "" {
				return nil, fmt.Errorf("%s: basic_auth needs username and password_file", where)
			}
			pw, err := readSecret(s.BasicAuth.PasswordFile)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			h := sha256.Sum256(pw)
			ws.basicUser, ws.basicPass = s.BasicAuth.Username, h[:]
		}
		if s.PagerDutySigningSecretFile != "" {
			sec, err := readSecret(s.PagerDutySigningSecretFile)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			ws.pdSecret = sec
		}
		if ws.bearer == nil && ws.basicPass == nil && ws.pdSecret == nil {
			return nil, fmt.Errorf("%s: no credential (bearer_token_file, bearer_token_sha256, basic_auth or pagerduty_signing_secret_file)", where)
		}
		out[name] = ws
	}
	return out, nil
}

// check reports whether r (whose body is body) carries this source's secret.
func (ws *webhookSource) check(r *http.Request, body []byte) bool {
	if ws.bearer != nil {
		if tok, ok := bearerToken(r); ok {
			h := sha256.Sum256([]byte(tok))
			if subtle.ConstantTimeCompare(h[:], ws.bearer) == 1 {
				return true
			}
		}
	}
	if ws.basicPass != nil {
		if u, p, ok := r.BasicAuth(); ok {
			h := sha256.Sum256([]byte(p))
			userOK := subtle.ConstantTimeCompare([]byte(u), []byte(ws.basicUser)) == 1
			if subtle.ConstantTimeCompare(h[:], ws.basicPass) == 1 && userOK {
				return true
			}
		}
	}
	if ws.pdSecret != nil && body != nil {
		m := hmac.New(sha256.New, ws.pdSecret)
		m.Write(body)
		want := "v1=" + hex.EncodeToString(m.Sum(nil))
		// PagerDuty sends one signature per active secret, comma separated.
		for _, sig := range strings.Split(r.Header.Get("X-PagerDuty-Signature"), ",") {
			if hmac.Equal([]byte(strings.TrimSpace(sig)), []byte(want)) {
				return true
			}
		}
	}
	return false
}

// needsBody reports whether checking the source reads the request body.
func (ws *webhookSource) needsBody() bool { return ws.pdSecret != nil }

// bearerToken is the token of an "Authorization: Bearer" header.
func bearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:]), true
	}
	return "", false
}
