// Command quantity is the oracle tests/integration/test_quantity_go.py compares webhook/api/quantity.py
// with: each stdin line is a JSON string; each stdout line is {"value": exact decimal} or
// {"error": message} from resource.ParseQuantity. Test infrastructure only: the product is Python.
package main

import (
	"bufio"
	"encoding/json"
	"os"

	"k8s.io/apimachinery/pkg/api/resource"
)

type answer struct {
	Value *string `json:"value,omitempty"`
	Error *string `json:"error,omitempty"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var text string
		if err := json.Unmarshal(in.Bytes(), &text); err != nil {
			panic(err)
		}
		var a answer
		if q, err := resource.ParseQuantity(text); err != nil {
			msg := err.Error()
			a.Error = &msg
		} else {
			v := q.AsDec().String()
			a.Value = &v
		}
		if err := out.Encode(a); err != nil {
			panic(err)
		}
	}
	if err := in.Err(); err != nil {
		panic(err)
	}
}
