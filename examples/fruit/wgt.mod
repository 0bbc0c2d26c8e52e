// A PAW program: a natural-language spec compiled into a LoRA adapter by finetuning.
// Its interpreter here is the tiny Qwen3 the demo makes (nothing can be downloaded
// from Hugging Face offline); a real package would require hf.co/Qwen/Qwen3-0.6B.
module github.com/acme/fruit
wgt 0.1

require (
	hf.co/wgtpm-demo/tiny-qwen3 v0.1.0
	hf.co/wgtpm-demo/tiny-qwen3-gguf v0.1.0
)

artifact fruit fruit.pawspec
