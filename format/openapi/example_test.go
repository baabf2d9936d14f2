package openapi_test

import (
	"context"
	"fmt"

	"github.com/caphub/caphub/format/openapi"
)

func ExampleImport() {
	spec := []byte(`openapi: 3.0.3
info: {title: Pet Store, version: 1.2.0}
servers: [{url: "https://pets.example.com/v1"}]
paths:
  /pets/{petId}:
    get:
      operationId: getPetById
      summary: Find a pet
      parameters:
        - {name: petId, in: path, required: true, schema: {type: integer}}
      responses:
        "200":
          description: the pet
          content:
            application/json:
              schema: {type: object, properties: {name: {type: string}}}
        "404": {description: not found}
`)
	res, err := openapi.Import(context.Background(), "petstore.yaml", spec, openapi.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range res.Definitions {
		fmt.Println(d.URI, d.Bindings.HTTP.Method, d.Bindings.HTTP.URL)
		for _, e := range d.Errors {
			fmt.Println(" error", e.Code)
		}
	}
	fmt.Println(res.Operations, "operations,", len(res.Failures), "failures")
	// Output:
	// ossa:pet-store/get_pet_by_id@1.2 GET https://pets.example.com/v1/pets/{petId}
	//  error HTTP_404_NOT_FOUND
	// 1 operations, 0 failures
}
