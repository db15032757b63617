package sessionid_test

import (
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/sessionid"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		id   string
		want string // "" = valid; else a substring of the error
	}{
		{"s1", ""},
		{"inc-0f3a9c21b7d4e5f6-lds4", ""},
		{"team-a.prod", ""},
		{"team-a_prod", ""},
		{"team:a", ""},
		{strings.Repeat("a", 128), ""},
		{"", "required"},
		{strings.Repeat("a", 129), "129 bytes"},
		{strings.Repeat("a", 4000), "4000 bytes"},
		{"a b", `' '`},
		{"a/b", `'/'`},
		{"a*", `'*'`},
		{"a>", `'>'`},
		{"a=b", `'='`},
		{"ü", `'ü'`},
		{"a\xffb", "byte 0xff at byte 1"},
		{"a\x00", `'\x00'`},
		{"line\n", `'\n'`},
	}
	for _, tt := range tests {
		err := sessionid.Check("session_id", tt.id)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Check(%.40q) = %v, want valid", tt.id, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("Check(%.40q) = %v, want an error containing %q", tt.id, err, tt.want)
		}
		if sessionid.Valid(tt.id) != (tt.want == "") {
			t.Errorf("Valid(%.40q) = %v", tt.id, !(tt.want == ""))
		}
	}
}
