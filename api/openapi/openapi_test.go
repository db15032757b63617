package openapi_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rcamesh/rcamesh/api/openapi"
)

func TestSpecMatchesGenerated(t *testing.T) {
	gen, err := os.ReadFile(filepath.Join("..", "..", "gen", "openapi", "rcamesh.swagger.json"))
	if err != nil {
		t.Fatalf("read generated spec: %v", err)
	}
	if !bytes.Equal(gen, openapi.Spec) {
		t.Fatal("api/openapi/rcamesh.swagger.json differs from gen/openapi/rcamesh.swagger.json: run cp gen/openapi/rcamesh.swagger.json api/openapi/")
	}
}

func TestSpecIsSwagger(t *testing.T) {
	var doc struct {
		Swagger string                     `json:"swagger"`
		Paths   map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapi.Spec, &doc); err != nil {
		t.Fatalf("spec is not JSON: %v", err)
	}
	if doc.Swagger != "2.0" || len(doc.Paths) == 0 {
		t.Fatalf("spec has swagger %q and %d paths", doc.Swagger, len(doc.Paths))
	}
}
