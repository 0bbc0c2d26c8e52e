// A torch model of its own on a pinned, frozen embedding: train.py takes the tiny
// Qwen3's token embedding through wgtpm.open(...).tensor(...), grafts it frozen,
// trains a linear head, and wgtpm.save writes model/ (each tensor's origin in its
// manifest). wgtpm runs no Python at publish time: model/ is committed, as files.
module github.com/acme/word-kind
wgt 0.1

require hf.co/wgtpm-demo/tiny-qwen3 v0.1.0

artifact model-manifest model/manifest.json
artifact model-weights model/weights.safetensors
