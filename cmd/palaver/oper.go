package main

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"golang.org/x/crypto/bcrypt"

	"github.com/palaver-chat/palaver/gateway/irc"
)

// operCredentials builds the OPER name → bcrypt hash map from --oper entries (or PALAVER_OPER,
// comma-separated) and the --oper-file. An --oper entry with a plain password is hashed here, so
// the process keeps no password, and warned about: the command line shows in ps. The file must
// hold hashes only.
func operCredentials(entries []string, file string) (map[string]string, error) {
	opers := map[string]string{}
	for _, e := range entries {
		name, secret, ok := strings.Cut(e, ":")
		if !ok || name == "" || secret == "" {
			return nil, fmt.Errorf("--oper %q: want name:bcrypt-hash", redactOper(e))
		}
		if !irc.IsPasswordHash(secret) {
			slog.Warn("--oper with a plain password: it shows in the process list; give a bcrypt hash, or use --oper-file or PALAVER_OPER", "name", name)
			hash, err := bcrypt.GenerateFromPassword([]byte(secret), bcrypt.DefaultCost)
			if err != nil {
				return nil, fmt.Errorf("--oper %s: hashing the password: %w", name, err)
			}
			secret = string(hash)
		}
		opers[name] = secret
	}
	if file == "" {
		return opers, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--oper-file: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		name, hash, ok := strings.Cut(text, ":")
		if !ok || name == "" || !irc.IsPasswordHash(hash) {
			return nil, fmt.Errorf("--oper-file %s line %d: want name:bcrypt-hash (e.g. from htpasswd -nB name)", file, line)
		}
		opers[name] = hash
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--oper-file %s: %w", file, err)
	}
	return opers, nil
}

// redactOper is an --oper entry as it may be shown in an error: its name only.
func redactOper(entry string) string {
	name, _, _ := strings.Cut(entry, ":")
	return name + ":…"
}
