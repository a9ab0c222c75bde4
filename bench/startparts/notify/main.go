// Command notify is a bare exec that first catches TERM, INT and HUP as
// the entrypoint does (signal.Notify, which starts the runtime's signal
// thread and makes one round trip to it per signal): the price of PID 1's
// signal handling on every start.
package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/streamfusion/image-entrypoint/bench/startparts/handoff"
)

func main() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	handoff.Exec()
}
