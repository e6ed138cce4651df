// Command aso is an asynchronous stage-out agent: it moves a user's output
// files between grid sites through FTS3. See README.md.
package main

import (
	"os"

	"github.com/asyncstageout/aso/cmd"
)

func main() { os.Exit(cmd.Execute()) }
