// A tiny base model: an XOR network whose hidden layer others can reuse.
module github.com/acme/xor-base
wgt 0.1

artifact xor model.wgt
