package devserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// serverLogger adapts the server's tag-based log.Logger to a slog.Logger whose
// handler already filters by level, so a disabled level costs one call and no
// tag conversion.
type serverLogger struct {
	log   *slog.Logger
	level *slog.LevelVar // shared by loggers derived with With
}

var (
	_ log.Logger     = serverLogger{}
	_ log.WithLogger = serverLogger{}
)

// newServerLogger returns a logger writing text lines to w at level and above;
// a nil w discards everything.
func newServerLogger(w io.Writer, level string) (serverLogger, error) {
	lvl, err := parseLogLevel(level)
	if err != nil {
		return serverLogger{}, err
	}
	lv := new(slog.LevelVar)
	lv.Set(lvl)
	if w == nil {
		return serverLogger{log: slog.New(slog.DiscardHandler), level: lv}, nil
	}
	h := slog.NewTextHandler(w, &slog.HandlerOptions{Level: lv})
	return serverLogger{log: slog.New(h).With("component", "temporal"), level: lv}, nil
}

// quietenForShutdown silences the logger unless it logs info or debug: while
// stopping, services warn and even err about peers and polls that have
// already stopped, which is expected and no use to a user.
func (l serverLogger) quietenForShutdown() {
	if l.level.Level() >= slog.LevelWarn {
		l.level.Set(levelNone)
	}
}

// levelNone is above every level the server logs at.
const levelNone = slog.LevelError + 100

// parseLogLevel accepts debug, info, warn (the default for ""), error and none.
func parseLogLevel(level string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(level)) {
	case "":
		return slog.LevelWarn, nil
	case "none", "never", "off":
		return levelNone, nil
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return 0, fmt.Errorf("log level %q: want debug, info, warn, error or none", level)
	}
	return lvl, nil
}

func (l serverLogger) Debug(msg string, tags ...tag.Tag) { l.emit(slog.LevelDebug, msg, tags) }
func (l serverLogger) Info(msg string, tags ...tag.Tag)  { l.emit(slog.LevelInfo, msg, tags) }
func (l serverLogger) Warn(msg string, tags ...tag.Tag)  { l.emit(slog.LevelWarn, msg, tags) }
func (l serverLogger) Error(msg string, tags ...tag.Tag) { l.emit(slog.LevelError, msg, tags) }

// DPanic, Panic and Fatal only log: an embedded server must never take the
// host process down.
func (l serverLogger) DPanic(msg string, tags ...tag.Tag) { l.emit(slog.LevelError, msg, tags) }
func (l serverLogger) Panic(msg string, tags ...tag.Tag)  { l.emit(slog.LevelError, msg, tags) }
func (l serverLogger) Fatal(msg string, tags ...tag.Tag)  { l.emit(slog.LevelError, msg, tags) }

// With returns a logger that prepends tags to every record.
func (l serverLogger) With(tags ...tag.Tag) log.Logger {
	return serverLogger{log: l.log.With(attrs(tags)...), level: l.level}
}

func (l serverLogger) emit(level slog.Level, msg string, tags []tag.Tag) {
	ctx := context.Background()
	if !l.log.Enabled(ctx, level) {
		return
	}
	l.log.Log(ctx, level, msg, attrs(tags)...)
}

func attrs(tags []tag.Tag) []any {
	out := make([]any, len(tags))
	for i, t := range tags {
		out[i] = slog.Any(t.Key(), t.Value())
	}
	return out
}
