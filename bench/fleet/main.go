// Command fleet measures a fleet of ScaledObjects of the azure-cosmosdb
// trigger polling one Cosmos DB account, as one KEDA operator polls them:
// this project's scaler and KEDA v2.21.0's own, side by side in one run
// (issue AD). `make bench-fleet` runs it; BENCHMARKS.md ("A fleet on one
// operator") has the method and the figures.
//
// Three processes: `fleet run` (the default) starts, per fleet size, an
// account process (`fleet server`: the embedded server behind a counting
// TLS listener, and the Entra ID test issuer) and then, one at a time and
// interleaved, fleet processes (`fleet client`: N scalers built as KEDA's
// operator builds them, polled on KEDA's cadence), and prints the tables.
//
// It lives in its own module because importing KEDA's pkg/scalers compiles
// every KEDA scaler (tens of minutes cold); the main module never does.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

func main() {
	mode, args := "run", os.Args[1:]
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		mode, args = args[0], args[1:]
	}
	var err error
	switch mode {
	case "run":
		err = runAll(args)
	case "server":
		err = runServer(args)
	case "client":
		err = runClient(args)
	case "plot":
		err = replot(args)
	default:
		err = fmt.Errorf("unknown mode %q: run, server, client or plot", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

// cpuSeconds is this process's user and system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// loadAverage is the first three fields of /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// establishedTo counts the established TCP connections whose local end is
// the port of url (http://127.0.0.1:port/), from /proc/net/tcp.
func establishedTo(url string) int {
	i := strings.LastIndex(url, ":")
	if i < 0 {
		return -1
	}
	port, err := strconv.Atoi(strings.TrimSuffix(url[i+1:], "/"))
	if err != nil {
		return -1
	}
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return -1
	}
	defer f.Close()
	want := fmt.Sprintf(":%04X", port)
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 3 && strings.HasSuffix(fields[1], want) && fields[3] == "01" {
			n++
		}
	}
	return n
}
