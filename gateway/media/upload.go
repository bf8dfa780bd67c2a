package media

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	_ "image/gif"  // image.DecodeConfig for GIF dimensions
	_ "image/jpeg" // and JPEG
	_ "image/png"  // and PNG
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	_ "golang.org/x/image/webp" // and WebP

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/raft/fsm"
	fsmmedia "github.com/palaver-chat/palaver/raft/fsm/media"
)

const (
	// headKeep is how much of an upload's start is kept in memory for sniffing and dimensions.
	headKeep = 64 << 10
	// maxField bounds a non-file form field.
	maxField = 1024
	// maxFilename bounds a stored file name (bytes).
	maxFilename = 128
)

// uploadResult is the answer to an upload.
type uploadResult struct {
	URL         string            `json:"url"`
	ID          string            `json:"id"`
	ContentType string            `json:"content_type"`
	Size        int64             `json:"size"`
	Filename    string            `json:"filename"`
	Private     bool              `json:"private"`
	Width       int               `json:"width,omitempty"`
	Height      int               `json:"height,omitempty"`
	Tags        map[string]string `json:"tags"`
}

// uploadForm is what the multipart body said.
type uploadForm struct {
	private  bool
	channel  string
	did      string
	filename string
	hasFile  bool
	size     int64
	head     []byte
}

// headWriter keeps the first headKeep bytes written.
type headWriter struct{ b []byte }

func (h *headWriter) Write(p []byte) (int, error) {
	if room := headKeep - len(h.b); room > 0 {
		h.b = append(h.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (s *Service) upload(c *gin.Context) {
	did := rest.DID(c)
	fail := func(status int, result, msg string) {
		s.metrics.uploads.WithLabelValues(result).Inc()
		rest.WriteError(c, status, msg)
	}
	if c.Request.ContentLength > MaxUploadBytes {
		fail(http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("The upload body is over %d bytes", MaxUploadBytes))
		return
	}
	expect := max(c.Request.ContentLength, 0)
	if s.store.full(expect) || s.belowFloor(expect) {
		fail(http.StatusInsufficientStorage, "disk_full", "This server's media storage is full")
		return
	}
	var total int64
	s.cfg.State.Read(func(st *fsm.State) { total = fsmmedia.Of(st).Total() })
	if t := s.opts.TotalBytes; t > 0 && total+expect > t+1024 {
		fail(http.StatusInsufficientStorage, "disk_full", "This server holds all the media it keeps")
		return
	}
	addr := c.ClientIP()
	reserved := max(expect, 1)
	if ok, wait := s.addr.take(addr, reserved, s.now()); !ok {
		c.Header("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		fail(http.StatusTooManyRequests, "address_budget", fmt.Sprintf("Your address has uploaded its %d bytes for this hour", s.opts.AddressBytes))
		return
	}
	stored := false
	defer func() {
		if !stored {
			s.addr.give(addr, reserved)
		}
	}()
	var used int64
	s.cfg.State.Read(func(st *fsm.State) { used = fsmmedia.Of(st).Usage(did) })
	if q := s.opts.QuotaBytes; q > 0 && used+expect > q+1024 { // the multipart framing is not file bytes
		fail(http.StatusRequestEntityTooLarge, "quota", fmt.Sprintf("This upload would pass your media quota of %d bytes", q))
		return
	}
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, MaxUploadBytes)
	mr, err := c.Request.MultipartReader()
	if err != nil {
		fail(http.StatusBadRequest, "bad_request", "The body must be multipart/form-data with a part named file")
		return
	}
	id := newID()
	w, err := s.store.create(id)
	if err != nil {
		s.log.Error("upload: creating the object", "err", err)
		fail(http.StatusInternalServerError, "error", "The upload could not be stored")
		return
	}
	defer w.abort()
	form, status, err := readForm(mr, w)
	if err != nil {
		result := "bad_request"
		if status == http.StatusRequestEntityTooLarge {
			result = "too_large"
		}
		fail(status, result, err.Error())
		return
	}
	if form.did != "" && form.did != did {
		fail(http.StatusForbidden, "forbidden", "The did field names another identity than the bearer token's")
		return
	}
	if form.channel != "" {
		name, err := rest.ParseChannelName(form.channel)
		if err != nil {
			fail(http.StatusBadRequest, "bad_request", "Bad channel name: "+err.Error())
			return
		}
		var acc fsm.ChannelAccess
		s.cfg.State.Read(func(st *fsm.State) { acc = st.ChannelAccessOf(name, did) })
		switch {
		case !acc.Exists:
			fail(http.StatusNotFound, "bad_request", "No such channel: "+name)
			return
		case !acc.Member && !acc.Manager:
			fail(http.StatusForbidden, "forbidden", "Only members of "+name+" may upload to it")
			return
		}
		form.channel = name
		form.private = form.private || acc.Restricted
	}
	if s.belowFloor(form.size) {
		fail(http.StatusInsufficientStorage, "disk_full", "This server's media storage is full")
		return
	}
	mime := sniff(form.head)
	width, height := dimensions(mime, form.head)
	if err := w.commit(); err != nil {
		if errors.Is(err, errDiskFull) {
			fail(http.StatusInsufficientStorage, "disk_full", "This server's media storage is full")
			return
		}
		s.log.Error("upload: committing the object", "err", err)
		fail(http.StatusInternalServerError, "error", "The upload could not be stored")
		return
	}
	holders, err := s.replicate(c.Request.Context(), id, form.size)
	if err != nil && !s.holderChangesAllowed() {
		// A rolling upgrade: the record names this node alone (recordCommand) and the repair
		// pass makes the missing copies once every server takes them.
		s.log.Info("upload: copies left to the repair pass after the upgrade", "id", id, "err", err)
		err = nil
	}
	if err != nil {
		s.store.remove(id)
		s.log.Warn("upload: copying to other servers", "id", id, "err", err)
		c.Header("Retry-After", retryAfterHolderDown)
		fail(http.StatusServiceUnavailable, "error", "The upload could not be copied to enough servers; try again")
		return
	}
	obj := fsmmedia.MediaObject{ID: id, Holder: s.cfg.Node, Holders: holders, Size: form.size, MIME: mime, Filename: form.filename,
		Private: form.private, Uploader: did, Channel: form.channel, Width: width, Height: height}
	res, ok := s.propose(c, s.recordCommand(obj))
	if !ok || res.Code != fsm.OK {
		s.store.remove(id)
		switch {
		case !ok:
			s.metrics.uploads.WithLabelValues("error").Inc()
		case res.Code == fsmmedia.ErrMediaQuota:
			fail(http.StatusRequestEntityTooLarge, "quota", fmt.Sprintf("This upload would pass your media quota of %d bytes", s.opts.QuotaBytes))
		case res.Code == fsmmedia.ErrMediaFull:
			fail(http.StatusInsufficientStorage, "disk_full", "This server holds the most uploads it records")
		default:
			fail(http.StatusBadRequest, "bad_request", "The upload was refused: "+res.Code.String())
		}
		return
	}
	stored = true
	s.metrics.uploads.WithLabelValues("stored").Inc()
	s.metrics.uploadBytes.Add(float64(form.size))
	c.JSON(http.StatusOK, s.describe(obj))
}

// describe is the upload answer for an object: its URL and attachment tags.
func (s *Service) describe(o fsmmedia.MediaObject) uploadResult {
	u := strings.TrimRight(s.cfg.BaseURL, "/") + "/api/v1/media/" + o.ID + "/"
	if o.Private {
		u += capability(s.capKey(), o.ID) + "/"
	}
	u += url.PathEscape(o.Filename)
	tags := map[string]string{"media-url": u, "media-mime": o.MIME, "media-size": strconv.FormatInt(o.Size, 10),
		"media-filename": o.Filename}
	if o.Width > 0 && o.Height > 0 {
		tags["media-w"], tags["media-h"] = strconv.Itoa(o.Width), strconv.Itoa(o.Height)
	}
	return uploadResult{URL: u, ID: o.ID, ContentType: o.MIME, Size: o.Size, Filename: o.Filename, Private: o.Private,
		Width: o.Width, Height: o.Height, Tags: tags}
}

// readForm streams the multipart body: the file part into w, the small fields into the form.
// It answers the status of a refusal: 413 past the body limit, 400 for anything malformed
// (a missing file part, a second one, a truncated body).
func readForm(mr *multipart.Reader, w io.Writer) (uploadForm, int, error) {
	var form uploadForm
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return form, bodyStatus(err), bodyError(err)
		}
		switch part.FormName() {
		case "file":
			if form.hasFile {
				return form, http.StatusBadRequest, errors.New("more than one file part")
			}
			form.hasFile = true
			form.filename = cleanFilename(part.FileName())
			head := &headWriter{}
			n, err := io.Copy(io.MultiWriter(w, head), part)
			if err != nil {
				return form, bodyStatus(err), bodyError(err)
			}
			form.size, form.head = n, head.b
		case "private", "channel", "did":
			v, err := io.ReadAll(io.LimitReader(part, maxField+1))
			if err != nil {
				return form, bodyStatus(err), bodyError(err)
			}
			if len(v) > maxField {
				return form, http.StatusBadRequest, fmt.Errorf("field %s is over %d bytes", part.FormName(), maxField)
			}
			switch value := strings.TrimSpace(string(v)); part.FormName() {
			case "private":
				form.private = value == "1" || strings.EqualFold(value, "true") || strings.EqualFold(value, "yes")
			case "channel":
				form.channel = value
			case "did":
				form.did = value
			}
		default: // alt, share flags, ...: read past, bounded by the body limit
			if _, err := io.Copy(io.Discard, part); err != nil {
				return form, bodyStatus(err), bodyError(err)
			}
		}
	}
	if !form.hasFile {
		return form, http.StatusBadRequest, errors.New("the multipart body has no part named file")
	}
	return form, 0, nil
}

func bodyStatus(err error) int {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

func bodyError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return fmt.Errorf("the upload body is over %d bytes", MaxUploadBytes)
	}
	return fmt.Errorf("the multipart body is malformed or cut short: %v", err)
}

// cleanFilename makes a client's file name safe to store and show: its last path element,
// without control or format characters, quotes or leading dots, at most maxFilename bytes; "file"
// when nothing is left.
func cleanFilename(name string) string {
	name = strings.ReplaceAll(name, "\\", "/")
	name = path.Base(name)
	name = strings.Map(func(r rune) rune {
		switch {
		case r == utf8.RuneError, r == '"', r == '/', unicode.IsControl(r), unicode.Is(unicode.Cf, r):
			return -1
		}
		return r
	}, name)
	name = strings.TrimLeft(strings.TrimSpace(name), ".")
	for len(name) > maxFilename {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	if name == "" {
		return "file"
	}
	return name
}

// sniff names the type of an upload from its bytes (never from the client).
func sniff(head []byte) string {
	t := http.DetectContentType(head)
	if i := strings.IndexByte(t, ';'); i >= 0 && !strings.HasPrefix(t, "text/") {
		t = t[:i]
	}
	return t
}

// dimensions reads an image's width and height from its header, for png, jpeg, gif and webp.
func dimensions(mime string, head []byte) (int, int) {
	switch mime {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		cfg, _, err := image.DecodeConfig(bytes.NewReader(head))
		if err == nil {
			return cfg.Width, cfg.Height
		}
	}
	return 0, 0
}
