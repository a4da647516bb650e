// Command jwks-server serves the JSON Web Key Set in $JWKS at every path
// over HTTP on $PORT (8080 by default): the JWKS endpoint the fleet's e2e
// tests run as a Pod.
package main

import (
	"cmp"
	"encoding/json"
	"log"
	"net/http"
	"os"

	"isobar.dev/e2e/jwks"
)

func main() {
	doc := []byte(os.Getenv("JWKS"))
	if !json.Valid(doc) {
		log.Fatal("JWKS is not a JSON document")
	}
	addr := ":" + cmp.Or(os.Getenv("PORT"), "8080")
	log.Printf("serving a key set on %s", addr)
	log.Fatal(http.ListenAndServe(addr, &jwks.Server{Doc: doc}))
}
