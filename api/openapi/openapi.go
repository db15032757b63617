// Package openapi embeds the OpenAPI (Swagger 2.0) document of the rcamesh
// REST gateway. rcamesh.swagger.json here is a copy of
// gen/openapi/rcamesh.swagger.json (gen/ is wiped on regeneration, so it
// cannot hold the embed directive); a test fails when the two differ. After
// `make generate`, refresh it with:
//
//	cp gen/openapi/rcamesh.swagger.json api/openapi/
package openapi

import _ "embed"

// Spec is the OpenAPI document as JSON.
//
//go:embed rcamesh.swagger.json
var Spec []byte
