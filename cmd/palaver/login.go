package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// loginTimeout bounds connecting plus the SASL login.
const loginTimeout = 30 * time.Second

// runLogin implements `palaver login`: it logs in over IRC with an ed25519
// did:key identity, prints the REST bearer token on stdout and keeps the
// session (and so the token) alive until --hold elapses or it is
// interrupted. Exit codes: 0 success, 1 failure, 2 usage error.
func runLogin(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("login", flag.ContinueOnError)
	flags.SetOutput(stderr)
	keyPath := flags.String("key", "./palaver-agent.key", "ed25519 seed file (hex); created with mode 0600 if missing")
	server := flags.String("server", "127.0.0.1:6697", "IRC server address host:port")
	useTLS := flags.Bool("tls", true, "connect with TLS (use --tls=false for plain TCP)")
	insecure := flags.Bool("insecure", false, "skip TLS certificate verification (for the self-signed default certificate)")
	wsURL := flags.String("ws", "", "connect over WebSocket to this URL instead (e.g. ws://127.0.0.1:8080/irc)")
	nick := flags.String("nick", "", `nick to register (default "agent-" + 8 characters of the DID)`)
	hold := flags.Duration("hold", 0, "keep the session open this long; 0 = until interrupted")
	printDID := flags.Bool("print-did", false, "print the DID of the key on stdout and exit without connecting")
	mintPassword := flags.String("mint-password", "", "mint a client password of this name for ordinary IRC clients (SASL PLAIN or SCRAM-SHA-256, user name the DID), print it on stdout instead of the token, and exit")
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(stderr, "palaver login: unexpected arguments: %s\n", strings.Join(flags.Args(), " "))
		return 2
	}

	priv, created, err := loadOrCreateKey(*keyPath)
	if err != nil {
		fmt.Fprintf(stderr, "palaver login: %v\n", err)
		return 1
	}
	if created {
		fmt.Fprintf(stderr, "created new agent key %s\n", *keyPath)
	}
	signer := ircclient.NewEd25519Signer(priv)
	if *printDID {
		fmt.Fprintln(stdout, signer.DID())
		return 0
	}
	fmt.Fprintf(stderr, "DID: %s\n", signer.DID())
	if *nick == "" {
		*nick = defaultNick(signer.DID())
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	loginCtx, cancel := context.WithTimeout(ctx, loginTimeout)
	defer cancel()
	client, err := dialLogin(loginCtx, *wsURL, *server, *useTLS, *insecure)
	if err != nil {
		fmt.Fprintf(stderr, "palaver login: %v\n", err)
		return 1
	}
	defer client.Close()
	res, err := client.LoginSASL(loginCtx, signer, *nick)
	if err != nil {
		fmt.Fprintf(stderr, "palaver login: %v\n", err)
		return 1
	}
	if *mintPassword != "" {
		password, err := mintClientPassword(loginCtx, client, *mintPassword)
		if err != nil {
			fmt.Fprintf(stderr, "palaver login: %v\n", err)
			return 1
		}
		fmt.Fprintf(stderr, "client password %q minted: log in with SASL PLAIN or SCRAM-SHA-256 as %s\n", *mintPassword, signer.DID())
		fmt.Fprintln(stdout, password)
		_ = client.Send("QUIT :palaver login done")
		return 0
	}
	fmt.Fprintln(stdout, res.Token)

	holdCtx := ctx
	if *hold > 0 {
		var cancelHold context.CancelFunc
		holdCtx, cancelHold = context.WithTimeout(ctx, *hold)
		defer cancelHold()
	}
	if err := client.Hold(holdCtx); err != nil {
		fmt.Fprintf(stderr, "palaver login: session ended: %v\n", err)
		return 1
	}
	if err := client.Send("QUIT :palaver login done"); err != nil {
		fmt.Fprintf(stderr, "palaver login: %v\n", err)
		return 1
	}
	return 0
}

// mintClientPassword sends PASSWORD ADD name on a logged-in connection and returns the password
// of the NOTE PASSWORD ADDED answer.
func mintClientPassword(ctx context.Context, client *ircclient.Client, name string) (string, error) {
	if err := client.Send("PASSWORD ADD " + name); err != nil {
		return "", err
	}
	m, err := client.Expect(ctx, func(m ircmsg.Message) bool {
		return (m.Command == "NOTE" || m.Command == "FAIL") && m.Param(0) == "PASSWORD"
	})
	if err != nil {
		return "", fmt.Errorf("minting a client password: %w", err)
	}
	if m.Command == "FAIL" || m.Param(1) != "ADDED" || m.Param(2) != name || m.Param(3) == "" {
		return "", fmt.Errorf("minting a client password: the server answered %q", m.String())
	}
	return m.Param(3), nil
}

func dialLogin(ctx context.Context, wsURL, server string, useTLS, insecure bool) (*ircclient.Client, error) {
	switch {
	case wsURL != "":
		return ircclient.DialWebSocket(ctx, wsURL)
	case useTLS:
		return ircclient.DialTLS(ctx, server, &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure})
	default:
		return ircclient.Dial(ctx, server)
	}
}

// defaultNick derives "agent-" plus the 8 characters after "did:key:z6Mk".
func defaultNick(did string) string {
	id := strings.TrimPrefix(did, "did:key:z6Mk")
	if len(id) > 8 {
		id = id[:8]
	}
	return "agent-" + id
}

// loadOrCreateKey loads the hex ed25519 seed at path, or creates the file
// (mode 0600) with a fresh random seed when it does not exist. created
// reports whether a new key was written.
func loadOrCreateKey(path string) (priv ed25519.PrivateKey, created bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		priv, err = createKey(path)
		if !errors.Is(err, fs.ErrExist) { // lost a creation race: load the winner's key
			return priv, err == nil, err
		}
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading key file: %w", err)
	}
	seed, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil {
		return nil, false, fmt.Errorf("key file %s is not hex: %w", path, err)
	}
	if len(seed) != ed25519.SeedSize {
		return nil, false, fmt.Errorf("key file %s holds %d bytes, want a %d-byte ed25519 seed", path, len(seed), ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), false, nil
}

func createKey(path string) (ed25519.PrivateKey, error) {
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return nil, fmt.Errorf("generating key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating key file: %w", err)
	}
	_, err = f.WriteString(hex.EncodeToString(seed) + "\n")
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("writing key file %s: %w", path, err)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}
