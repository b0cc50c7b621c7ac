package scripttarget_test

import (
	"fmt"

	"github.com/rlctl/rlctl/internal/target/scripttarget"
)

func ExampleParseRule() {
	r, err := scripttarget.ParseRule("[1] == 1")
	if err != nil {
		panic(err)
	}
	allowed, _ := r.Match([]any{int64(1), int64(41)}) // a script returning {allowed, remaining}
	denied, _ := r.Match([]any{int64(0), int64(0)})
	fmt.Println(allowed, denied)
	// Output: true false
}
