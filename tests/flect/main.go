// Command flect prints kubebuilder's plural for each kind read on stdin, one a line:
// flect.Pluralize(strings.ToLower(kind)), as kubebuilder's resource.RegularPlural does.
// opsdk's tests compare its own plurals with this output.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/gobuffalo/flect"
)

func main() {
	in := bufio.NewScanner(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		fmt.Fprintln(out, flect.Pluralize(strings.ToLower(in.Text())))
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
