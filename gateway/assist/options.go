package assist

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
)

// Options configure the assistance surface: the LLM provider behind /agent/session.
type Options struct {
	// LLMURL is the base URL of an OpenAI-compatible API (".../v1"); /chat/completions is
	// appended. Empty: no provider, /agent/session answers LLM_NOT_CONFIGURED.
	LLMURL string
	// LLMModel is the model name sent to the provider.
	LLMModel string
	// LLMKeyFile holds the provider's API key (sent as a bearer token); empty sends none.
	LLMKeyFile string
	// LLMTimeout bounds one /agent/session request, provider calls and tool calls together.
	LLMTimeout time.Duration
	// LLMRounds bounds the provider round trips (tool-call rounds) of one request.
	LLMRounds int
}

// Defaults returns the options with their default values.
func Defaults() Options {
	return Options{LLMTimeout: 30 * time.Second, LLMRounds: 4}
}

// Flags declares the options' flags on fs, with the current values as defaults.
func (o *Options) Flags(fs *flag.FlagSet) {
	fs.StringVar(&o.LLMURL, "llm-url", o.LLMURL, "base URL of an OpenAI-compatible chat completions API (e.g. https://api.example.com/v1) behind POST /agent/session; empty: no provider (LLM_NOT_CONFIGURED)")
	fs.StringVar(&o.LLMModel, "llm-model", o.LLMModel, "model name sent to the --llm-url provider")
	fs.StringVar(&o.LLMKeyFile, "llm-key-file", o.LLMKeyFile, "file holding the --llm-url provider's API key, sent as a bearer token")
	fs.DurationVar(&o.LLMTimeout, "llm-timeout", o.LLMTimeout, "time limit of one /agent/session request, provider and tool calls together")
	fs.IntVar(&o.LLMRounds, "llm-rounds", o.LLMRounds, "most provider round trips (tool-call rounds) of one /agent/session request")
}

// Configured reports whether a provider is set.
func (o Options) Configured() bool { return o.LLMURL != "" }

// Validate checks the options.
func (o Options) Validate() error {
	var errs []error
	if o.LLMURL != "" {
		u, err := url.Parse(o.LLMURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("--llm-url %q: not an http(s) URL", o.LLMURL))
		}
		if o.LLMModel == "" {
			errs = append(errs, errors.New("--llm-model is required with --llm-url"))
		}
	}
	if o.LLMTimeout <= 0 {
		errs = append(errs, errors.New("--llm-timeout must be positive"))
	}
	if o.LLMRounds < 1 || o.LLMRounds > 16 {
		errs = append(errs, errors.New("--llm-rounds must be 1 to 16"))
	}
	return errors.Join(errs...)
}

// maxKeyBytes bounds the API key file.
const maxKeyBytes = 4096

// readKey reads the provider's API key from the key file ("" without one).
func (o Options) readKey() (string, error) {
	if o.LLMKeyFile == "" {
		return "", nil
	}
	data, err := os.ReadFile(o.LLMKeyFile)
	if err != nil {
		return "", fmt.Errorf("--llm-key-file: %w", err)
	}
	key := strings.TrimSpace(string(data))
	if key == "" || len(key) > maxKeyBytes || strings.ContainsAny(key, "\r\n") {
		return "", fmt.Errorf("--llm-key-file %s: expected one line holding the key", o.LLMKeyFile)
	}
	return key, nil
}
