package minibatch

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// compileFormat turns a partition format such as
// "{Store}/{Brand}/{file_name}.csv" into a regexp over a slash path and the
// names of its columns, in order. {name} matches within one folder name;
// {name:format} (a date format in Azure ML) matches any text, slashes
// included, and its value is that text.
func compileFormat(format string) (*regexp.Regexp, []string, error) {
	var re strings.Builder
	var names []string
	re.WriteString("^")
	rest := format
	for rest != "" {
		open := strings.IndexAny(rest, "{}")
		if open < 0 {
			re.WriteString(regexp.QuoteMeta(rest))
			break
		}
		if rest[open] == '}' {
			return nil, nil, errors.New("\"}\" without \"{\"")
		}
		re.WriteString(regexp.QuoteMeta(rest[:open]))
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return nil, nil, errors.New("\"{\" without \"}\"")
		}
		name, datefmt, hasFmt := strings.Cut(rest[open+1:open+end], ":")
		if name == "" || strings.ContainsAny(name, "{/") {
			return nil, nil, fmt.Errorf("bad column name %q", rest[open:open+end+1])
		}
		if slices.Contains(names, name) {
			return nil, nil, fmt.Errorf("column %q appears twice", name)
		}
		names = append(names, name)
		if hasFmt && datefmt != "" {
			re.WriteString("(.+?)")
		} else {
			re.WriteString("([^/]*)")
		}
		rest = rest[open+end+1:]
	}
	re.WriteString("$")
	rx, err := regexp.Compile(re.String())
	return rx, names, err
}

// partitioner collects, per distinct key tuple, the files holding it and
// their row counts, in order of first appearance.
type partitioner struct {
	src     source
	t       table
	keys    []string
	format  *regexp.Regexp
	fcols   []string // the partition format's columns
	index   map[string]int
	batches []*Batch
}

// keySource says where a key's value comes from: column col of each
// record, or (col < 0) the file's path, as value.
type keySource struct {
	col   int
	value string
}

func planPartitions(src source, t table, keys []string, w *writer) error {
	p := &partitioner{src: src, t: t, keys: keys, index: map[string]int{}}
	if t.read.PartitionFormat != "" {
		var err error
		if p.format, p.fcols, err = compileFormat(t.read.PartitionFormat); err != nil {
			return inputErrorf(t.source, 0, "partition format %q is malformed (%v): name each column in braces", t.read.PartitionFormat, err)
		}
	}
	hs := headers{mode: t.read.Header}
	for _, f := range t.files {
		if err := p.scanFile(f, &hs); err != nil {
			return err
		}
	}
	for _, b := range p.batches {
		if err := w.add(b); err != nil {
			return err
		}
	}
	return nil
}

func (p *partitioner) scanFile(f file, hs *headers) error {
	s, err := openRecords(p.src, f, p.t.read.Delimiter)
	if err != nil {
		return err
	}
	defer s.close()
	h, ok, err := hs.read(s)
	if err != nil || !ok {
		return err
	}
	var srcs []keySource
	if h.path != "" {
		if srcs, err = p.sources(f, h.columns); err != nil {
			return err
		}
	}
	counts := map[string]int{}
	var order []tuple
	values := make([]string, len(p.keys))
	for {
		rec, _, err := s.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if srcs == nil { // no_header: the columns are Column1..N
			if srcs, err = p.sources(f, numberedColumns(len(rec))); err != nil {
				return err
			}
		}
		for i, src := range srcs {
			values[i] = src.value
			if src.col >= 0 && src.col < len(rec) {
				values[i] = rec[src.col]
			}
		}
		// The key joins the values with their lengths, so no value can
		// make two tuples collide.
		k := tupleKey(values)
		if counts[k] == 0 {
			order = append(order, tuple{key: k, values: slices.Clone(values)})
		}
		counts[k]++
	}
	for _, tu := range order {
		p.addPart(tu, h.part(f.path, 0, f.size, counts[tu.key]))
	}
	return nil
}

// tuple is one distinct tuple of key values.
type tuple struct {
	key    string
	values []string
}

func tupleKey(values []string) string {
	var b strings.Builder
	for _, v := range values {
		b.WriteString(strconv.Itoa(len(v)))
		b.WriteByte(':')
		b.WriteString(v)
	}
	return b.String()
}

func (p *partitioner) addPart(tu tuple, part Part) {
	i, ok := p.index[tu.key]
	if !ok {
		i = len(p.batches)
		p.index[tu.key] = i
		p.batches = append(p.batches, &Batch{Table: &Table{
			Read:            p.t.read,
			PartitionKeys:   p.keys,
			PartitionValues: tu.values,
		}})
	}
	b := p.batches[i]
	b.Table.Parts = append(b.Table.Parts, part)
	b.Items += part.Rows
}

// sources finds each key among the partition format's columns (first) and
// the file's columns.
func (p *partitioner) sources(f file, columns []string) ([]keySource, error) {
	var pathValues []string
	srcs := make([]keySource, len(p.keys))
	for i, k := range p.keys {
		if fi := slices.Index(p.fcols, k); fi >= 0 {
			if pathValues == nil {
				rel := relTo(p.t.root, f.name)
				m := p.format.FindStringSubmatch(rel)
				if m == nil {
					return nil, inputErrorf(f.path, 0, "the file's path %q does not match the partition format %q, so partition key %q has no value: fix the format in %s, or move the file", rel, p.t.read.PartitionFormat, k, p.t.source)
				}
				pathValues = m[1:]
			}
			srcs[i] = keySource{col: -1, value: pathValues[fi]}
			continue
		}
		col := slices.Index(columns, k)
		if col < 0 {
			return nil, p.unknownKey(f, k, columns)
		}
		srcs[i] = keySource{col: col}
	}
	return srcs, nil
}

func (p *partitioner) unknownKey(f file, key string, columns []string) error {
	all := append(append([]string(nil), columns...), p.fcols...)
	quoted := make([]string, len(all))
	for i, c := range all {
		quoted[i] = strconv.Quote(c)
	}
	hint := ""
	if p.t.read.Header == HeaderNone {
		hint = " (with header no_header, columns are named Column1, Column2, ...)"
	}
	return inputErrorf(f.path, 1, "partition key %q is not a column of the file%s: use one of %s in partition_keys", key, hint, strings.Join(quoted, ", "))
}

func numberedColumns(n int) []string {
	cols := make([]string, n)
	for i := range cols {
		cols[i] = "Column" + strconv.Itoa(i+1)
	}
	return cols
}
