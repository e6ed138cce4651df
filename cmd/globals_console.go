package cmd

import "time"

// progressMode resolves --progress for standard error: auto is live on a
// terminal and nothing elsewhere; always is live on a terminal and plain
// lines elsewhere (a file or a pipe never gets a control character);
// never is nothing.
func (g *Globals) progressMode(flag string) int {
	tty := isTerminal(g.Stderr)
	switch {
	case flag == "never":
		return progressOff
	case tty:
		return progressLive
	case flag == "always":
		return progressPlain
	}
	return progressOff
}

// openConsole returns the console of a command whose --progress is flag.
// Live lines appear after delay (0: at the first show), so that a command
// that ends sooner draws nothing; the log goes through the console from now
// until close.
func (g *Globals) openConsole(flag string, delay time.Duration) *console {
	c := &console{g: g, mode: g.progressMode(flag)}
	if c.mode != progressLive {
		return c
	}
	c.log = &switchWriter{w: g.Stderr}
	prevLog, prevOut := g.Log.Out, g.Stdout
	g.Log.SetOutput(c.log)
	if sameTerminal(g.Stdout, g.Stderr) {
		c.stdout = &switchWriter{w: g.Stdout}
		g.Stdout = c.stdout
	}
	c.restore = func() { g.Log.SetOutput(prevLog); g.Stdout = prevOut }
	if delay > 0 {
		c.timer = time.AfterFunc(delay, c.show)
	}
	return c
}
