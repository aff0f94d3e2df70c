package main

import (
	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/usecase"
)

// LoRA adapters and per-request models (issue 38, docs/adapters.md): the reference engine's
// --lora and --max-loras (part of the engine flags, so they work wherever those do: run,
// simulate, serve, plan, ab) and import's --keep-model.

// loraEngineFlags are the engine's adapter flags.
type loraEngineFlags struct {
	adapters []string
	maxLoRAs int
}

func (f *loraEngineFlags) add(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.adapters, "lora", nil, "reference engine: serve a LoRA adapter NAME[:RANK] on the base model (repeatable or comma-separated; rank default 16); requests name it as their model (docs/adapters.md)")
	fs.IntVar(&f.maxLoRAs, "max-loras", 0, "reference engine, with --lora: adapter slots on the GPU, as vLLM's --max-loras (0: 1, vLLM's default); a request whose adapter finds no free slot waits, and a load costs the adapter's bytes over PCIe")
}

// addImportModelFlags adds import's --keep-model.
func addImportModelFlags(fs *pflag.FlagSet, o *usecase.ImportOptions) {
	fs.BoolVar(&o.Import.KeepModel, "keep-model", false, "burstgpt, weka: keep each request's recorded model name as its model field (sent per request; the target must serve those names)")
}

// addGenModelFlags adds gen's --models.
func addGenModelFlags(fs *pflag.FlagSet, o *usecase.GenOptions) {
	fs.StringVar(&o.Spec.Models, "models", "", "send each request (each session) to one of these models or LoRA adapters, drawn by weight: base=6,sql-lora=3,chat-lora=1 (every class; a spec file's classes may give their own \"models\")")
}
