#!/usr/bin/env python3
"""Builds the model zoo: public models no one here wrote, traced to TorchScript.

Usage: make_zoo.py OUT_DIR [--only NAME ...] [--list] [--expect A,B,...]

For each model: random weights (seeded, no downloads), batch-norm statistics
calibrated on random batches, zero-initialized heads and layer scales
re-initialized (so outputs are not degenerate), put in eval mode, traced with
torch.jit.trace on batch-1 inputs and saved as OUT_DIR/NAME.pt, with
OUT_DIR/NAME.json holding the input specs in tgc's syntax (the names are
forward's argument names, as tgc-aot wants them) and the family; the same
weights converted to bfloat16 are traced again as OUT_DIR/NAME.bf16.pt
(tgc-zoo --dtype bf16).

Sizes are small on purpose (64-px images, 32-token sequences, few layers):
the zoo runs in CI on two cores. Models come from torchvision, timm and
Hugging Face transformers at the versions tools/setup.sh pins.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn as nn

IMG = 64
SEQ = 32
VOCAB = 1000


def image(channels=3, size=IMG):
    return [("x", torch.randn(1, channels, size, size), f"x:f32[1,{channels},{size},{size}]")]


def tokens(name="input_ids", vocab=VOCAB, seq=SEQ):
    t = torch.randint(0, vocab, (1, seq))
    return [(name, t, f"{name}:i64[1,{seq}]@0:{vocab}")]


def tv(name, **kw):
    import torchvision

    return lambda: getattr(torchvision.models, name)(weights=None, **kw)


def timm_model(name, **kw):
    import timm

    return lambda: timm.create_model(name, pretrained=False, **kw)


def vit_small():
    from torchvision.models.vision_transformer import VisionTransformer

    return VisionTransformer(image_size=IMG, patch_size=16, num_layers=2, num_heads=4,
                             hidden_dim=128, mlp_dim=256, num_classes=100)


def mixer_small():
    from timm.models.mlp_mixer import MlpMixer

    return MlpMixer(img_size=IMG, patch_size=16, num_blocks=4, embed_dim=256, num_classes=100)


def swin_small():
    from torchvision.models.swin_transformer import SwinTransformer

    return SwinTransformer(patch_size=[4, 4], embed_dim=48, depths=[2, 2, 2], num_heads=[2, 4, 8],
                           window_size=[4, 4], num_classes=100)


def hf(kind, **cfg):
    def build():
        import transformers

        config_cls, model_cls = {
            "bert": ("BertConfig", "BertModel"),
            "distilbert": ("DistilBertConfig", "DistilBertModel"),
            "gpt2": ("GPT2Config", "GPT2LMHeadModel"),
            "llama": ("LlamaConfig", "LlamaForCausalLM"),
            "t5": ("T5Config", "T5ForConditionalGeneration"),
        }[kind]
        config = getattr(transformers, config_cls)(**cfg)
        config.use_cache = False  # no cache objects in the traced outputs
        model = getattr(transformers, model_cls)(config)
        return HfWrapper(model, kind)

    return build


class HfWrapper(nn.Module):
    """Takes the token tensors positionally and returns the first output
    (logits or the last hidden state)."""

    def __init__(self, model, kind):
        super().__init__()
        self.model = model
        self.kind = kind

    def forward(self, input_ids, decoder_input_ids=None):
        if self.kind == "t5":
            return self.model(input_ids=input_ids, decoder_input_ids=decoder_input_ids)[0]
        return self.model(input_ids=input_ids)[0]


SMALL_LM = dict(vocab_size=VOCAB, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                intermediate_size=256, max_position_embeddings=128)

# name: (family, builder, inputs)
MODELS = {
    "resnet18": ("cnn", tv("resnet18", num_classes=100), image),
    "resnet50": ("cnn", tv("resnet50", num_classes=100), image),
    "densenet121": ("cnn", tv("densenet121", num_classes=100), image),
    "efficientnet_b0": ("cnn", tv("efficientnet_b0", num_classes=100), image),
    "mobilenet_v3_small": ("cnn", tv("mobilenet_v3_small", num_classes=100), image),
    "shufflenet_v2_x0_5": ("cnn", tv("shufflenet_v2_x0_5", num_classes=100), image),
    "regnet_y_400mf": ("cnn", tv("regnet_y_400mf", num_classes=100), image),
    "convnext_tiny": ("cnn", tv("convnext_tiny", num_classes=100), image),
    "squeezenet1_1": ("cnn", tv("squeezenet1_1", num_classes=100), image),
    "mnasnet0_5": ("cnn", tv("mnasnet0_5", num_classes=100), image),
    "vit_small": ("vision-transformer", vit_small, image),
    "swin_small": ("vision-transformer", swin_small, image),
    "deit_tiny": ("vision-transformer",
                  timm_model("deit_tiny_patch16_224", img_size=IMG, num_classes=100, depth=4), image),
    "mixer_s16": ("mlp-mixer", mixer_small, image),
    "timm_resnet26d": ("cnn", timm_model("resnet26d", num_classes=100), image),
    "bert": ("encoder-lm", hf("bert", **SMALL_LM), tokens),
    "distilbert": ("encoder-lm",
                   hf("distilbert", vocab_size=VOCAB, dim=128, n_layers=2, n_heads=4,
                      hidden_dim=256, max_position_embeddings=128), tokens),
    "gpt2": ("decoder-lm",
             hf("gpt2", vocab_size=VOCAB, n_embd=128, n_layer=2, n_head=4, n_positions=128), tokens),
    "llama": ("decoder-lm",
              hf("llama", num_key_value_heads=2, rms_norm_eps=1e-5, **SMALL_LM), tokens),
    "t5": ("encoder-decoder",
           hf("t5", vocab_size=VOCAB, d_model=128, d_kv=32, d_ff=256, num_layers=2,
              num_decoder_layers=2, num_heads=4), lambda: tokens() + tokens("decoder_input_ids")),
}


def calibrate(model, inputs):
    """Batch-norm running statistics from random batches, then eval."""
    has_bn = any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules())
    if has_bn and inputs[0][1].is_floating_point():
        model.train()
        with torch.no_grad():
            for _ in range(3):
                batch = [torch.randn(4, *t.shape[1:]) for _, t, _ in inputs]
                model(*batch)
    model.eval()


def reinit_zeros(model):
    """Heads and layer scales some models zero-initialize get random values."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.numel() > 1 and torch.count_nonzero(p) == 0:
                p.normal_(0, 0.02 if p.dim() > 1 else 0.1)


def build(name, out_dir):
    family, make, inputs_of = MODELS[name]
    torch.manual_seed(sum(map(ord, name)))
    model = make()
    inputs = inputs_of()
    reinit_zeros(model)
    calibrate(model, inputs)
    args = tuple(t for _, t, _ in inputs)
    with torch.no_grad():
        traced = torch.jit.trace(model, args, check_trace=False, strict=False)
    path = os.path.join(out_dir, name + ".pt")
    traced.save(path)
    # The same weights in bfloat16, traced so (a graph traced in f32 keeps
    # f32 constants, causal masks for one, that a converted copy trips on).
    model16 = model.to(torch.bfloat16)
    args16 = tuple(t.to(torch.bfloat16) if t.is_floating_point() else t for t in args)
    with torch.no_grad():
        traced16 = torch.jit.trace(model16, args16, check_trace=False, strict=False)
    traced16.save(os.path.join(out_dir, name + ".bf16.pt"))
    names = [a.name for a in traced.forward.schema.arguments][1:]
    specs = []
    for arg, (_, _, spec) in zip(names, inputs):
        specs.append(arg + spec[spec.index(":"):])
    with open(os.path.join(out_dir, name + ".json"), "w") as f:
        json.dump({"name": name, "family": family, "inputs": specs}, f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--expect", help="comma-separated names: fail unless the zoo is exactly these")
    a = ap.parse_args()
    if a.list:
        print("\n".join(MODELS))
        return 0
    if a.expect is not None and sorted(a.expect.split(",")) != sorted(MODELS):
        print(f"make_zoo.py: the zoo is {sorted(MODELS)}, the tests expect "
              f"{sorted(a.expect.split(','))}: update tests/zoo/CMakeLists.txt", file=sys.stderr)
        return 1
    os.makedirs(a.out_dir, exist_ok=True)
    torch.set_num_threads(2)
    failed = []
    for name in a.only or MODELS:
        start = time.time()
        try:
            build(name, a.out_dir)
            print(f"{name}: traced in {time.time() - start:.1f} s", flush=True)
        except Exception as e:  # a model that does not trace is reported, the rest still built
            failed.append(name)
            print(f"{name}: FAILED to build or trace: {type(e).__name__}: {e}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
