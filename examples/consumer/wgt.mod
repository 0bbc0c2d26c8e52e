// A TEMPLATE project using every example, and one file of a large Hugging Face repo.
// Its versions are not resolved offline: run `wgtpm tidy` with a registry or the
// internet to get wgt.sum (see README.md). The demo builds model.wgt in demo-consumer/.
module example.com/consumer
wgt 0.1

require (
	github.com/acme/xor-classifier v0.1.0   // pulls in github.com/acme/xor-base by MVS
	github.com/acme/fruit v0.1.0
	github.com/acme/triage v0.1.0
	github.com/acme/word-kind v0.1.0   // a torch model; word_kind.py runs it
)
// and, pinned to a commit of its main branch: wgtpm get hf.co/Qwen/Qwen3-0.6B-GGUF@main

// Of the GGUF repo, fetch only this file; one h1 still locks the whole repo's index.
select hf.co/Qwen/Qwen3-0.6B-GGUF Qwen3-0.6B-Q8_0.gguf

artifact xnor model.wgt   // XNOR on xor-base's hidden layer, imported frozen
