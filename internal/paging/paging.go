// Package paging is the page_size / page_token convention of every list
// RPC: a page size with a default and a maximum, and an opaque token that
// carries the offset of the next item in the list's stable order, tagged
// with the list it belongs to so that a token of one list is refused by
// another.
package paging

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// Size is the page size of a request: requested when positive, else
// fallback (a deprecated limit field) when positive, else def; at most max.
// A negative size is an error.
func Size(requested, fallback int32, def, max int) (int, error) {
	if requested < 0 {
		return 0, fmt.Errorf("page_size must be >= 0, got %d", requested)
	}
	if fallback < 0 {
		return 0, fmt.Errorf("limit must be >= 0, got %d", fallback)
	}
	n := int(requested)
	if n == 0 {
		n = int(fallback)
	}
	if n == 0 {
		n = def
	}
	return min(n, max), nil
}

// Token encodes the offset of the next item of list.
func Token(list string, offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("v1:" + list + ":" + strconv.Itoa(offset)))
}

// Offset decodes a page token of list ("" is the first page, offset 0). A
// token that is not one Token made for this list is an error.
func Offset(list, token string) (int, error) {
	if token == "" {
		return 0, nil
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil {
		return 0, fmt.Errorf("page_token is not a token this list returned")
	}
	rest, ok := strings.CutPrefix(string(raw), "v1:"+list+":")
	if !ok {
		return 0, fmt.Errorf("page_token is not a token of this list")
	}
	off, err := strconv.Atoi(rest)
	// Only the canonical form (the decoder skips line breaks and slack bits).
	if err != nil || off < 0 || Token(list, off) != token {
		return 0, fmt.Errorf("page_token is not a token this list returned")
	}
	return off, nil
}

// Page returns the bounds [from, to) of the page of n items that starts at
// offset and holds at most size items, and the token of the next page (""
// on the last page). An offset beyond the end gives an empty last page.
func Page(list string, n, offset, size int) (from, to int, next string) {
	from = min(offset, n)
	to = min(from+size, n)
	if to < n {
		next = Token(list, to)
	}
	return from, to, next
}
