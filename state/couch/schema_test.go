package couch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/pb33f/jsonschema/v6"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/statetest"
)

const schemaPath = "../../docs/transfer.schema.json"

// transferSchema compiles docs/transfer.schema.json and returns it with
// its parsed form.
func transferSchema(t *testing.T) (*jsonschema.Schema, map[string]any) {
	t.Helper()
	b, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", schemaPath, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("transfer.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("transfer.schema.json")
	if err != nil {
		t.Fatalf("compile %s: %v", schemaPath, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return sch, m
}

func schemaValidate(t *testing.T, sch *jsonschema.Schema, raw []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("test document: %v", err)
	}
	return sch.Validate(v)
}

// TestSchema_MatchesTransfer: the schema names every field of the stored
// document, requires exactly the fields without which aso refuses a new
// document, lists the states of state.States, and marks as readOnly the
// fields aso owns.
func TestSchema_MatchesTransfer(t *testing.T) {
	_, m := transferSchema(t)
	props, _ := m["properties"].(map[string]any)
	var fields []string
	rt := reflect.TypeFor[state.Transfer]()
	for i := range rt.NumField() {
		if name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ","); name != "-" {
			fields = append(fields, name)
		}
	}
	var named []string
	for k := range props {
		named = append(named, k)
	}
	sort.Strings(fields)
	sort.Strings(named)
	if !slices.Equal(fields, named) {
		t.Errorf("schema properties %v, want the fields of state.Transfer %v", named, fields)
	}

	// required: removing the field from a good new document makes aso
	// refuse it; every other field may be left out
	base := producerBase("schema/required.root")
	var required []string
	for _, r := range m["required"].([]any) {
		required = append(required, r.(string))
	}
	for _, f := range fields {
		d := map[string]any{}
		for k, v := range base {
			if k != f {
				d[k] = v
			}
		}
		b, _ := json.Marshal(d)
		err := goAccepts(b)
		if got, want := err != nil, slices.Contains(required, f); got != want {
			t.Errorf("without %s: aso says %v, but the schema's required list has it: %v", f, err, want)
		}
	}

	var states []string
	for _, s := range props["state"].(map[string]any)["enum"].([]any) {
		states = append(states, s.(string))
	}
	var want []string
	for _, s := range state.States {
		want = append(want, string(s))
	}
	if !slices.Equal(states, want) {
		t.Errorf("schema states %v, want %v", states, want)
	}

	// readOnly: the fields a producer writes are those of state.Request,
	// the identity and state of the document and its times
	producer := map[string]bool{"_id": true, "type": true, "state": true, "created": true, "last_update": true}
	rq := reflect.TypeFor[state.Request]()
	for i := range rq.NumField() {
		name, _, _ := strings.Cut(rq.Field(i).Tag.Get("json"), ",")
		producer[name] = true
	}
	for _, f := range fields {
		ro, _ := props[f].(map[string]any)["readOnly"].(bool)
		if ro == producer[f] {
			t.Errorf("field %s: readOnly %v, want %v", f, ro, !producer[f])
		}
	}
}

// TestSchema_Corpus: the producer corpus validates against the schema as
// aso judges it (except the faults the schema cannot express), and so do
// the documents aso itself writes in each state.
func TestSchema_Corpus(t *testing.T) {
	sch, _ := transferSchema(t)
	for _, c := range producerCorpus() {
		err := schemaValidate(t, sch, c.doc)
		switch {
		case c.good && err != nil:
			t.Errorf("%s: the schema refuses a good document: %v", c.name, err)
		case !c.good && c.bySchemaToo && err == nil:
			t.Errorf("%s: the schema accepts a bad document", c.name)
		case !c.good && !c.bySchemaToo && err != nil:
			t.Errorf("%s: the schema refuses it (%v): mark it bySchemaToo", c.name, err)
		}
	}

	ctx := context.Background()
	u := newDB(t)
	c := newClock()
	s := open(t, u, c, "alice", "host:1:a", couch.Options{})
	enqueue(t, s, requests("alice", 4))
	got := claim(t, s, 3)
	res, err := statetest.Prepare(ctx, s, got[:2], "sid-1")
	mustOK(t, res, err)
	for i := range got[:2] {
		got[i].Rev = res[i].Rev
	}
	res, err = statetest.Commit(ctx, s, []state.Commit{
		{Transfer: got[0], SourcePFN: "davs://a/x", DestPFN: "davs://b/x", FileID: 1},
		{Transfer: got[1], SourcePFN: "davs://a/y", DestPFN: "davs://b/y", FileID: 2},
	}, "job-1")
	mustOK(t, res, err)
	got[0].Rev = res[0].Rev
	tr, err := s.Get(ctx, got[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	res, err = s.SetTerminalState(ctx, []state.Terminal{{Transfer: tr, Outcome: state.OutcomeDone, FTSJob: "job-1"}})
	mustOK(t, res, err)

	db := rawDB(t, u)
	seen := map[any]bool{}
	for _, r := range requests("alice", 4) {
		raw := getRaw(t, db, r.ID())
		seen[raw["state"]] = true
		b, _ := json.Marshal(raw)
		if err := schemaValidate(t, sch, b); err != nil {
			t.Errorf("aso's own %v document does not validate: %v\n%s", raw["state"], err, b)
		}
	}
	if len(seen) != 4 {
		t.Errorf("documents in states %v, want new, acquired, submitted and done", seen)
	}
}
