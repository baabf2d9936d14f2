package agentos_test

import (
	"fmt"
	"time"

	"github.com/caphub/caphub/format/agentos"
)

func ExampleImport() {
	manifest := []byte(`{
  "manifestVersion": "1.0",
  "package": "com.example.notes",
  "displayName": "Notes",
  "capabilities": [{
    "id": "createNote",
    "intents": ["notes.create"],
    "description": "Create a note",
    "inputs": [{"name": "text", "type": "string"}],
    "handler": {"type": "intent", "target": "com.example.notes.CREATE"}
  }]
}`)
	res, err := agentos.Import("capabilities.json", manifest, agentos.Options{CreatedAt: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range res.Definitions {
		fmt.Println(d.URI, d.Title, d.Intents)
		for kind := range d.Bindings.Extra {
			fmt.Println(" device binding:", kind, agentos.IsDeviceBinding(kind))
		}
	}
	fmt.Println(len(res.Failures), "failures")
	// Output:
	// ossa:com-example-notes/create_note@1.0 Notes: Create note [notes.create]
	//  device binding: intent true
	// 0 failures
}
