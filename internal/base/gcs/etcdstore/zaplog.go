package etcdstore

import (
	"context"
	"log/slog"
	"slices"
	"sort"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapLogger returns a zap logger for the etcd client and server that forwards entries at
// or above level to l, or a no-op logger when l is nil: etcd must not write to stderr on
// its own. (zap v1.21, which etcd 3.5 pins, predates zap's own slog bridge.)
func zapLogger(l *slog.Logger, level zapcore.Level) *zap.Logger {
	if l == nil {
		return zap.NewNop()
	}
	return zap.New(&slogCore{log: l, level: level})
}

type slogCore struct {
	log    *slog.Logger
	level  zapcore.Level
	fields []zapcore.Field
}

func (c *slogCore) Enabled(l zapcore.Level) bool { return l >= c.level }

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	return &slogCore{log: c.log, level: c.level, fields: append(slices.Clip(c.fields), fields...)}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	keys := make([]string, 0, len(enc.Fields))
	for k := range enc.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := make([]any, 0, 2*len(keys)+2)
	if e.LoggerName != "" {
		args = append(args, "logger", e.LoggerName)
	}
	for _, k := range keys {
		args = append(args, k, enc.Fields[k])
	}
	level := slog.LevelError
	switch {
	case e.Level < zapcore.InfoLevel:
		level = slog.LevelDebug
	case e.Level < zapcore.WarnLevel:
		level = slog.LevelInfo
	case e.Level < zapcore.ErrorLevel:
		level = slog.LevelWarn
	}
	c.log.Log(context.Background(), level, "etcd: "+e.Message, args...)
	return nil
}

func (c *slogCore) Sync() error { return nil }
