// Command gosumdb looks a module version up in a wgtpm registry's checksum
// database with Go's own client, golang.org/x/mod/sumdb.Client, so the tests
// check the log against Go's verifier rather than only against wgtpm's.
//
// Usage:
//
//	gosumdb -url URL -key VKEY -config DIR -cache DIR MODULE VERSION
//
// URL is the database's base (http://host:port/sumdb/NAME); VKEY the
// verifier key `wgtpm registry key` prints. DIR -config keeps the latest
// signed tree the client has seen (Go's $GOPATH/pkg/sumdb), -cache the
// verified lookups and tiles (Go's $GOPATH/pkg/mod/cache/download/sumdb),
// so a second run against a forked log is checked against the first.
//
// Output, exit status 0:
//
//	line MODULE VERSION h1:...           each line Client.Lookup returns
//	record MODULE VERSION/wgt.mod h1:... each line of the verified record
//
// Lookup returns only the lines whose version is VERSION exactly (or
// VERSION/go.mod): the record's "/wgt.mod" line is authenticated with the
// record but never returned, so the program reads the record back from the
// cache, where the client writes it only after checking it against the tree.
//
// On failure it prints "error: ..." (and, for a security error, the client's
// "SECURITY ERROR" report first) on stderr and exits with status 1.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb"
	"golang.org/x/mod/sumdb/tlog"
)

// maxBody caps what one ReadRemote reads (a tile is at most 8 KiB).
const maxBody = 1 << 20

// ops is sumdb.ClientOps over HTTP, with its configuration and cache in two folders.
type ops struct {
	url    string // the database's base URL, without a trailing slash
	key    string
	config string
	cache  string
	http   *http.Client
	mu     sync.Mutex // serialises WriteConfig's compare-and-swap
}

func (o *ops) ReadRemote(path string) ([]byte, error) {
	resp, err := o.http.Get(o.url + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s%s: %s: %s", o.url, path, resp.Status, bytes.TrimSpace(data))
	}
	return data, nil
}

func (o *ops) ReadConfig(file string) ([]byte, error) {
	if file == "key" {
		return []byte(o.key), nil
	}
	data, err := os.ReadFile(filepath.Join(o.config, filepath.FromSlash(file)))
	if os.IsNotExist(err) {
		return nil, nil // no tree seen yet: start from the empty one
	}
	return data, err
}

func (o *ops) WriteConfig(file string, old, new []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	have, err := o.ReadConfig(file)
	if err != nil {
		return err
	}
	if !bytes.Equal(have, old) {
		return sumdb.ErrWriteConflict
	}
	return writeFile(filepath.Join(o.config, filepath.FromSlash(file)), new)
}

func (o *ops) ReadCache(file string) ([]byte, error) {
	return os.ReadFile(filepath.Join(o.cache, filepath.FromSlash(file)))
}

func (o *ops) WriteCache(file string, data []byte) {
	if err := writeFile(filepath.Join(o.cache, filepath.FromSlash(file)), data); err != nil {
		o.Log("writing the cache: " + err.Error())
	}
}

func (o *ops) Log(msg string) { fmt.Fprintln(os.Stderr, msg) }

// SecurityError prints the report; cmd/go exits here, this program exits after Lookup returns.
func (o *ops) SecurityError(msg string) { fmt.Fprintln(os.Stderr, msg) }

// writeFile writes data under a temporary name and renames it into place.
func writeFile(name string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o777); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(name), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), name)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

func main() {
	url := flag.String("url", "", "the checksum database's URL (http://host:port/sumdb/NAME)")
	key := flag.String("key", "", "the database's verifier key")
	config := flag.String("config", "", "folder for the latest signed tree seen")
	cache := flag.String("cache", "", "folder for verified lookups and tiles")
	flag.Parse()
	if flag.NArg() != 2 || *url == "" || *key == "" || *config == "" || *cache == "" {
		fmt.Fprintln(os.Stderr, "usage: gosumdb -url URL -key VKEY -config DIR -cache DIR MODULE VERSION")
		os.Exit(2)
	}
	path, vers := flag.Arg(0), flag.Arg(1)
	o := &ops{
		url:    strings.TrimSuffix(*url, "/"),
		key:    *key,
		config: *config,
		cache:  *cache,
		http:   &http.Client{Timeout: 30 * time.Second},
	}
	lines, err := sumdb.NewClient(o).Lookup(path, vers)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	for _, l := range lines {
		fmt.Println("line", l)
	}
	// The record the client verified and cached: every line of it, /wgt.mod included.
	name := strings.SplitN(*key, "+", 2)[0]
	epath, err1 := module.EscapePath(path)
	evers, err2 := module.EscapeVersion(strings.TrimSuffix(vers, "/go.mod"))
	if err1 != nil || err2 != nil {
		return
	}
	data, err := o.ReadCache(name + "/lookup/" + epath + "@" + evers)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error: the verified record is not in the cache:", err)
		os.Exit(1)
	}
	_, text, _, err := tlog.ParseRecord(data)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	for _, l := range strings.Split(strings.TrimSuffix(string(text), "\n"), "\n") {
		fmt.Println("record", l)
	}
}
