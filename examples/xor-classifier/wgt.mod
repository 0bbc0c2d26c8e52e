// A two-class classifier on top of xor-base's hidden layer (imported, frozen).
module github.com/acme/xor-classifier
wgt 0.1

require github.com/acme/xor-base v0.1.0

artifact classifier model.wgt
artifact labels labels.json
