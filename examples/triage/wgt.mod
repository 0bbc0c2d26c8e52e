// A PAW program on the real Qwen3-0.6B. Before the first build, pin the interpreter:
//   wgtpm get hf.co/Qwen/Qwen3-0.6B@main     (a pseudo-version: the commit, locked by wgt.sum)
// The demo and the tests do not build this package (they are offline): see README.md.
module github.com/acme/triage
wgt 0.1

artifact triage triage.pawspec
