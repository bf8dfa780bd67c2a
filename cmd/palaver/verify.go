package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/palaver-chat/palaver/node/signing"
)

// maxBundleBytes bounds how much of a bundle `palaver verify` reads: 5000
// messages (the export cap) with generous tags fit well inside.
const maxBundleBytes = 256 << 20

// runVerify implements `palaver verify <bundle.json|->`: it checks an
// evidence bundle offline (the server's seal, then every signed message
// against the key its kid names) and prints a line per message. Exit codes:
// 0 everything checks, 1 tampering or an unreadable bundle, 2 usage error.
func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return verifyCommand(ctx, args, os.Stdin, stdout, stderr)
}

func verifyCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("verify", flag.ContinueOnError)
	flags.SetOutput(stderr)
	quiet := flags.Bool("q", false, "print only the summary line")
	flags.Usage = func() {
		fmt.Fprint(stderr, "Usage: palaver verify [-q] <bundle.json | ->\n\n"+
			"Checks a channel evidence bundle (GET /api/v1/channels/{name}/evidence):\n"+
			"the bundle signature, then each signed message. Unsigned (guest) messages are skipped.\n\n")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if flags.NArg() != 1 {
		flags.Usage()
		return 2
	}
	data, err := readBundle(flags.Arg(0), stdin)
	if err != nil {
		fmt.Fprintf(stderr, "palaver verify: %v\n", err)
		return 1
	}
	if err := ctx.Err(); err != nil {
		fmt.Fprintf(stderr, "palaver verify: %v\n", err)
		return 1
	}

	report, verifyErr := signing.VerifyBundle(data)
	if !*quiet {
		printReport(stdout, report)
	}
	valid, invalid, unverifiable, unsigned := report.Tally()
	counts := fmt.Sprintf("%d valid, %d invalid, %d unverifiable, %d unsigned", valid, invalid, unverifiable, unsigned)
	if verifyErr != nil {
		for _, problem := range splitErrors(verifyErr) {
			fmt.Fprintf(stderr, "FAIL: %v\n", problem)
		}
		fmt.Fprintf(stdout, "FAIL: %s\n", counts)
		return 1
	}
	fmt.Fprintf(stdout, "OK: bundle signature valid; %s\n", counts)
	return 0
}

// readBundle reads the named file, or stdin for "-", up to maxBundleBytes.
func readBundle(name string, stdin io.Reader) ([]byte, error) {
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("open bundle: %w", err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxBundleBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read bundle: %w", err)
	}
	if len(data) > maxBundleBytes {
		return nil, fmt.Errorf("bundle is larger than %d bytes", maxBundleBytes)
	}
	return data, nil
}

func printReport(w io.Writer, r signing.Report) {
	fmt.Fprintf(w, "bundle %s from %s, exported %s, server key %s: signature %s\n",
		orDash(r.Channel), orDash(r.ServerName), orDash(r.ExportedAt), orDash(r.ServerKID), r.BundleSignature)
	for _, m := range r.Messages {
		sender := m.Sender
		if m.SenderDID != "" {
			sender += " (" + m.SenderDID + ")"
		}
		fmt.Fprintf(w, "  %-26s %-12s %s: %s\n", orDash(m.MsgID), messageStatus(m), orDash(sender), messageDetail(m))
	}
}

func messageStatus(m signing.MessageReport) string {
	switch {
	case !m.Signed:
		return "skipped"
	case m.Verdict == signing.Invalid:
		return "INVALID"
	}
	return m.Verdict.String()
}

func messageDetail(m signing.MessageReport) string {
	switch {
	case !m.Signed:
		return "unsigned"
	case m.Verdict == signing.Valid && m.ByServer:
		return "server key " + m.KID + " (proves relay, not authorship)"
	case m.Verdict == signing.Valid:
		return "sender key " + m.KID + " (proves authorship)"
	case m.KID != "":
		return string(m.Reason) + " (key " + m.KID + ")"
	}
	return string(m.Reason)
}

// splitErrors undoes errors.Join so that each problem gets its own line.
func splitErrors(err error) []error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		return joined.Unwrap()
	}
	return []error{err}
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
