package media

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// MaxRanges is the most byte ranges a download answers as parts. A Range header asking for more,
// after overlapping and adjacent ranges are merged, is answered with the one range that covers
// them all (RFC 9110 §14.2 lets a server coalesce ranges or ignore the header), so that a
// header of thousands of small ranges costs one range's work and no more bytes than the object.
const MaxRanges = 16

// byteRange is an inclusive range of offsets.
type byteRange struct{ first, last int64 }

// normalizeRange rewrites a Range header for an object of size bytes: the satisfiable ranges,
// merged where they overlap or touch, in order, at most MaxRanges of them. ok is false when the
// header is not a bytes range set this function reads (syntax errors, other units): the caller
// leaves it to http.ServeContent, which ignores or refuses it. A set with no satisfiable range is
// returned as it is, for ServeContent's 416.
func normalizeRange(header string, size int64) (string, bool) {
	spec, found := strings.CutPrefix(header, "bytes=")
	if !found || size < 0 {
		return "", false
	}
	var ranges []byteRange
	for part := range strings.SplitSeq(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		startText, endText, found := strings.Cut(part, "-")
		if !found {
			return "", false
		}
		startText, endText = strings.TrimSpace(startText), strings.TrimSpace(endText)
		var r byteRange
		switch {
		case startText == "":
			n, err := strconv.ParseInt(endText, 10, 64)
			if err != nil || n < 0 {
				return "", false
			}
			if n == 0 || size == 0 {
				continue // a zero-length suffix is unsatisfiable
			}
			r = byteRange{max(size-n, 0), size - 1}
		default:
			first, err := strconv.ParseInt(startText, 10, 64)
			if err != nil || first < 0 {
				return "", false
			}
			last := size - 1
			if endText != "" {
				if last, err = strconv.ParseInt(endText, 10, 64); err != nil || last < first {
					return "", false
				}
			}
			if first >= size {
				continue // unsatisfiable
			}
			r = byteRange{first, min(last, size-1)}
		}
		ranges = append(ranges, r)
	}
	if len(ranges) == 0 {
		return header, true
	}
	slices.SortFunc(ranges, func(a, b byteRange) int { return cmp.Compare(a.first, b.first) })
	merged := ranges[:1]
	for _, r := range ranges[1:] {
		last := &merged[len(merged)-1]
		if r.first <= last.last+1 {
			last.last = max(last.last, r.last)
			continue
		}
		merged = append(merged, r)
	}
	if len(merged) > MaxRanges {
		merged = []byteRange{{merged[0].first, merged[len(merged)-1].last}}
	}
	var b strings.Builder
	b.WriteString("bytes=")
	for i, r := range merged {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(r.first, 10))
		b.WriteByte('-')
		b.WriteString(strconv.FormatInt(r.last, 10))
	}
	return b.String(), true
}
