package intake

import (
	"bytes"
	"io"
	"net/http"
	"strings"
)

// Some senders post a JSON array of alerts as the whole body (Apache
// SkyWalking's alarm hook). The API's payload is a JSON object, so an
// array travels wrapped in an object with the single field ArrayField;
// Parse reads such an object as the array it carries.

// ArrayField is the one field of the object that carries a top-level
// array payload.
const ArrayField = "rcamesh_payload_array"

// WrapArray returns raw unchanged unless it is a JSON array, which it
// wraps as {"rcamesh_payload_array": raw}.
func WrapArray(raw []byte) []byte {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '[' {
		return raw
	}
	out := make([]byte, 0, len(t)+len(ArrayField)+6)
	out = append(out, `{"`+ArrayField+`":`...)
	out = append(out, t...)
	return append(out, '}')
}

// unwrapArray is the array an object made by WrapArray carries.
func unwrapArray(obj map[string]any) ([]any, bool) {
	if len(obj) != 1 {
		return nil, false
	}
	a, ok := obj[ArrayField].([]any)
	return a, ok
}

// alertsPath is where alerts are posted over REST.
const alertsPath = "/api/v4/alerts"

// ArrayBodies is HTTP middleware for the REST API: a POST of alerts whose
// body is a JSON array reaches the API wrapped by WrapArray. Other
// requests pass untouched. It runs inside the body limit, after
// authentication verified the body as sent.
func ArrayBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil || (r.URL.Path != alertsPath && !strings.HasPrefix(r.URL.Path, alertsPath+"/")) {
			next.ServeHTTP(w, r)
			return
		}
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			// The body limit's own error (413) is the mux's to report:
			// hand it the bytes read and the error on the next read.
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(raw), errReader{err}))
			next.ServeHTTP(w, r)
			return
		}
		body := WrapArray(raw)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
