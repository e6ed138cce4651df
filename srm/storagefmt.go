package srm

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// parseStorageXML reads the lfn-to-pfn rules of a CMS storage.xml:
//
//	<storage-mapping>
//	  <lfn-to-pfn protocol=".." destination-match=".." path-match=".." result=".." chain=".."/>
//	  ...
//	</storage-mapping>
//
// in file order, also when the catalogue is wrapped in <phedex> as the
// PhEDEx data service serves it (<phedex><storage-mapping>...), as WMCore
// reads it. pfn-to-lfn rules and other elements are ignored. A file that
// declares encoding="ISO-8859-1" (or US-ASCII) is read as such, as WMCore
// and CMSSW read it. name is the file's name, used in each rule's position
// ("storage.xml line 12").
func parseStorageXML(data []byte, name string) ([]ruleSource, error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.CharsetReader = charsetReader
	var srcs []ruleSource
	depth, mapDepth, wrapped, mapSeen := 0, 0, false, false
	for {
		line, _ := dec.InputPos()
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			switch {
			case depth == 1 && t.Name.Local == "phedex":
				wrapped = true
			case depth == 1 && t.Name.Local != "storage-mapping":
				return nil, fmt.Errorf("%s line %d: root element is <%s>, want <storage-mapping> (or <phedex> around it)", name, line, t.Name.Local)
			case t.Name.Local == "storage-mapping" && (depth == 1 || depth == 2 && wrapped):
				mapDepth, mapSeen = depth, true
			case mapDepth > 0 && depth == mapDepth+1 && t.Name.Local == "lfn-to-pfn":
				srcs = append(srcs, xmlRule(t, fmt.Sprintf("%s line %d", name, line)))
			}
		case xml.EndElement:
			if depth == mapDepth {
				mapDepth = 0
			}
			depth--
		}
	}
	if !mapSeen {
		return nil, fmt.Errorf("%s: no <storage-mapping> element", name)
	}
	if len(srcs) == 0 {
		return nil, fmt.Errorf("%s: no <lfn-to-pfn> rules", name)
	}
	return srcs, nil
}

// charsetReader reads the encodings other than UTF-8 that catalogues
// declare: ISO-8859-1 (Latin-1), whose bytes are the code points U+0000 to
// U+00FF, and its subset US-ASCII.
func charsetReader(charset string, input io.Reader) (io.Reader, error) {
	switch strings.ToLower(charset) {
	case "iso-8859-1", "iso8859-1", "iso_8859-1", "latin1", "latin-1", "l1", "us-ascii", "ascii":
		b, err := io.ReadAll(input)
		if err != nil {
			return nil, err
		}
		out := make([]byte, 0, len(b)+len(b)/8)
		for _, c := range b {
			out = utf8.AppendRune(out, rune(c))
		}
		return bytes.NewReader(out), nil
	}
	return nil, fmt.Errorf("encoding %q is not supported (use UTF-8 or ISO-8859-1)", charset)
}

func xmlRule(t xml.StartElement, where string) ruleSource {
	r := ruleSource{Where: where}
	for _, a := range t.Attr {
		switch a.Name.Local {
		case "protocol":
			r.Protocol = a.Value
		case "path-match":
			r.PathMatch = a.Value
		case "result":
			r.Result = a.Value
		case "chain":
			r.Chain = a.Value
		case "destination-match":
			r.DestinationMatch = a.Value
		}
	}
	return r
}

// storageJSONEntry is one element of a SITECONF storage.json array.
type storageJSONEntry struct {
	Site      string `json:"site"`
	Volume    string `json:"volume"`
	RSE       string `json:"rse"`
	Protocols []struct {
		Protocol string  `json:"protocol"`
		Access   string  `json:"access"`
		Prefix   *string `json:"prefix"`
		Rules    []struct {
			LFN   string `json:"lfn"`
			PFN   string `json:"pfn"`
			Chain string `json:"chain"`
		} `json:"rules"`
	} `json:"protocols"`
}

// parseStorageJSON reads the rules of one volume of a storage.json: a
// prefix P becomes the rule /(.*) -> P/$1; rules are lfn (path-match) ->
// pfn (result) with an optional chain. The volume is the one named, else the
// only one listed for the site, else the only one in the file.
func parseStorageJSON(data []byte, name, site, volume string) ([]ruleSource, error) {
	var entries []storageJSONEntry
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, fmt.Errorf("%s: want a JSON array of {site, volume, rse, protocols}: %v", name, err)
	}
	e, err := pickVolume(entries, name, site, volume)
	if err != nil {
		return nil, err
	}
	var srcs []ruleSource
	for i, p := range e.Protocols {
		where := fmt.Sprintf("%s volume %s protocols[%d]", name, e.Volume, i)
		switch {
		case p.Prefix != nil && len(p.Rules) > 0:
			return nil, fmt.Errorf("%s (protocol %q): has both prefix and rules, want one", where, p.Protocol)
		case p.Prefix != nil:
			if *p.Prefix == "" {
				return nil, fmt.Errorf("%s (protocol %q): empty prefix", where, p.Protocol)
			}
			srcs = append(srcs, ruleSource{Where: where + " prefix", Protocol: p.Protocol, PathMatch: "/(.*)", Result: *p.Prefix + "/$1"})
		case len(p.Rules) == 0:
			return nil, fmt.Errorf("%s (protocol %q): has neither prefix nor rules", where, p.Protocol)
		}
		for j, r := range p.Rules {
			srcs = append(srcs, ruleSource{
				Where: fmt.Sprintf("%s rules[%d]", where, j), Protocol: p.Protocol,
				PathMatch: r.LFN, Result: r.PFN, Chain: r.Chain,
			})
		}
	}
	return srcs, nil
}

func pickVolume(entries []storageJSONEntry, name, site, volume string) (storageJSONEntry, error) {
	cands := entries
	if slices.ContainsFunc(entries, func(e storageJSONEntry) bool { return e.Site == site }) {
		cands = slices.DeleteFunc(slices.Clone(entries), func(e storageJSONEntry) bool { return e.Site != site })
	}
	if volume != "" {
		cands = slices.DeleteFunc(slices.Clone(cands), func(e storageJSONEntry) bool { return e.Volume != volume })
	}
	if len(cands) == 1 {
		return cands[0], nil
	}
	var vols []string
	for _, e := range entries {
		vols = append(vols, fmt.Sprintf("%s/%s", e.Site, e.Volume))
	}
	if len(cands) == 0 {
		return storageJSONEntry{}, fmt.Errorf("%s: no entry for volume %q (entries: %s)", name, volume, strings.Join(vols, ", "))
	}
	return storageJSONEntry{}, fmt.Errorf("%s: %d volumes (%s): set volume to choose one", name, len(cands), strings.Join(vols, ", "))
}
