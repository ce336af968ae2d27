"""Transformer models for the zoo (ViT-B/16, BERT, GPT-2, LLaMA-family decoders), in plain PyTorch."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    """Multi-head self-attention through F.scaled_dot_product_attention (flash/mem-efficient on CUDA).

    `fused` keeps one qkv projection (torchvision MHA's in_proj, GPT-2's c_attn) instead of three (BERT,
    LLaMA); the parameter count is the same, the largest single layer is not. `kv_heads` < `heads` is grouped-query
    attention (Ainslie et al. 2023; Llama-3, Mistral, Qwen2.5): k and v project to kv_heads x head_dim and each
    key/value head serves heads/kv_heads query heads (repeated before SDPA, as Hugging Face's repeat_kv, so the FLOP
    counter sees ordinary attention). `out_bias` defaults to `bias` (Qwen2.5: biases on q, k, v but not on out).
    `impl` "eager" replaces SDPA with explicit softmax(QKᵀ/√d)V and dropout on the probabilities, as 2021-era
    Hugging Face BERT and timm ViT wrote it (an s×s score matrix kept for backward); `bench trace --attention eager`
    sets it on every Attention module.
    """

    impl = "sdpa"  # "sdpa" | "eager" (ATTENTION_IMPLS)

    def __init__(self, hidden: int, heads: int, *, bias: bool, fused: bool, dropout: float = 0.0,
                 causal: bool = False, kv_heads: int | None = None, out_bias: bool | None = None):
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden size {hidden} is not divisible by {heads} heads")
        kv_heads = heads if kv_heads is None else kv_heads
        if kv_heads < 1 or heads % kv_heads:
            raise ValueError(f"{heads} heads are not divisible into {kv_heads} key/value heads")
        self.heads, self.kv_heads, self.dropout, self.causal = heads, kv_heads, dropout, causal
        self.kv_dim = kv_heads * (hidden // heads)
        if fused:
            self.qkv = nn.Linear(hidden, hidden + 2 * self.kv_dim, bias=bias)
        else:
            self.q = nn.Linear(hidden, hidden, bias=bias)
            self.k = nn.Linear(hidden, self.kv_dim, bias=bias)
            self.v = nn.Linear(hidden, self.kv_dim, bias=bias)
        self.out = nn.Linear(hidden, hidden, bias=bias if out_bias is None else out_bias)

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
        b, s, h = x.shape
        if hasattr(self, "qkv"):
            q, k, v = self.qkv(x).split([h, self.kv_dim, self.kv_dim], dim=-1)
        else:
            q, k, v = self.q(x), self.k(x), self.v(x)
        head_dim = h // self.heads
        q = q.view(b, s, self.heads, head_dim).transpose(1, 2)
        k, v = (t.view(b, s, self.kv_heads, head_dim).transpose(1, 2) for t in (k, v))
        if rope is not None:
            q, k = _apply_rope(q, *rope), _apply_rope(k, *rope)
        if self.kv_heads != self.heads:
            group = self.heads // self.kv_heads
            k, v = (t[:, :, None].expand(b, self.kv_heads, group, s, head_dim).reshape(b, self.heads, s, head_dim)
                    for t in (k, v))
        if self.impl == "eager":
            y = _eager_attention(q, k, v, dropout=self.dropout if self.training else 0.0, causal=self.causal)
        else:
            y = F.scaled_dot_product_attention(
                q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=self.causal
            )
        return self.out(y.transpose(1, 2).reshape(b, s, h))


ATTENTION_IMPLS = ("sdpa", "eager")


def _eager_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, dropout: float,
                     causal: bool) -> torch.Tensor:
    """softmax(QKᵀ/√d)V written out (Hugging Face BertSelfAttention, timm Attention before fused_attn)."""
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if causal:
        s = q.shape[-2]
        mask = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    probs = F.dropout(torch.softmax(scores, dim=-1), p=dropout, training=dropout > 0)
    return torch.matmul(probs, v)


def _normal_init(model: nn.Module, std: float = 0.02) -> None:
    """BERT/GPT-2 style: N(0, std) for Linear and Embedding weights, zero biases, unit norms."""
    for m in model.modules():
        if isinstance(m, nn.Linear | nn.Embedding):
            nn.init.normal_(m.weight, std=std)
            bias = m.bias if isinstance(m, nn.Linear) else None  # Embedding has none; Linear(bias=False) holds None
            if bias is not None:
                nn.init.zeros_(bias)
        elif isinstance(m, nn.LayerNorm | RMSNorm | nn.Conv2d):
            m.reset_parameters()


# --- ViT-B/16 (Dosovitskiy et al. 2021), torchvision.models.vit_b_16 layout --------------------------------
class _VitBlock(nn.Module):
    def __init__(self, hidden: int, heads: int, mlp: int, dropout: float):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden, eps=1e-6)
        self.self_attention = Attention(hidden, heads, bias=True, fused=True)
        self.ln_2 = nn.LayerNorm(hidden, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(hidden, mlp), nn.GELU(), nn.Dropout(dropout), nn.Linear(mlp, hidden),
                                 nn.Dropout(dropout))
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.drop(self.self_attention(self.ln_1(x)))
        return x + self.mlp(self.ln_2(x))


class VisionTransformer(nn.Module):
    def __init__(self, image_size: int = 224, patch: int = 16, layers: int = 12, hidden: int = 768,
                 heads: int = 12, mlp: int = 3072, num_classes: int = 1000, dropout: float = 0.0):
        super().__init__()
        self.patch = patch
        self.conv_proj = nn.Conv2d(3, hidden, kernel_size=patch, stride=patch)
        self.class_token = nn.Parameter(torch.zeros(1, 1, hidden))
        self.seq_len = (image_size // patch) ** 2 + 1
        self.pos_embedding = nn.Parameter(torch.empty(1, self.seq_len, hidden))
        self.drop = nn.Dropout(dropout)
        self.layers = nn.ModuleList(_VitBlock(hidden, heads, mlp, dropout) for _ in range(layers))
        self.ln = nn.LayerNorm(hidden, eps=1e-6)
        self.head = nn.Linear(hidden, num_classes)

    def init_weights(self) -> None:
        # torchvision: truncated-normal patch embedding, xavier MLP, N(0, 0.02) positions, zero class token and
        # zero head.
        fan_in = self.conv_proj.in_channels * self.patch * self.patch
        nn.init.trunc_normal_(self.conv_proj.weight, std=math.sqrt(1 / fan_in))
        if self.conv_proj.bias is not None:  # built with one (Conv2d's default)
            nn.init.zeros_(self.conv_proj.bias)
        nn.init.zeros_(self.class_token)
        nn.init.normal_(self.pos_embedding, std=0.02)
        for m in self.layers.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.LayerNorm):
                m.reset_parameters()
        self.ln.reset_parameters()
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.conv_proj(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1)
        x = self.drop(x + self.pos_embedding)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.ln(x)[:, 0])


# --- BERT (Devlin et al. 2019), HF BertModel layout: embeddings, post-LN encoder, pooler -----------------
class _BertLayer(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn: int, dropout: float):
        super().__init__()
        self.attention = Attention(hidden, heads, bias=True, fused=False, dropout=dropout)
        self.attention_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.intermediate = nn.Linear(hidden, ffn)
        self.output = nn.Linear(ffn, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.attention_norm(x + self.drop(self.attention(x)))
        return self.output_norm(x + self.drop(self.output(F.gelu(self.intermediate(x)))))


class Bert(nn.Module):
    def __init__(self, layers: int, hidden: int, heads: int, vocab: int = 30522, max_positions: int = 512,
                 type_vocab: int = 2, dropout: float = 0.1):
        super().__init__()
        self.max_positions = max_positions
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.position_embeddings = nn.Embedding(max_positions, hidden)
        self.token_type_embeddings = nn.Embedding(type_vocab, hidden)
        self.embeddings_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.drop = nn.Dropout(dropout)
        self.layers = nn.ModuleList(_BertLayer(hidden, heads, 4 * hidden, dropout) for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden)

    def init_weights(self) -> None:
        _normal_init(self)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(masked-LM logits over every position, pooled [CLS] output). The logits come out of forward, not a
        separate method, so DDP and torch.compile wrappers see the whole computation."""
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.word_embeddings(input_ids) + self.position_embeddings(positions)
        x = self.drop(self.embeddings_norm(x + self.token_type_embeddings(token_type_ids)))
        for layer in self.layers:
            x = layer(x)
        # MLM decoder tied to the word embeddings, no transform layer and no bias: adds no parameters.
        return F.linear(x, self.word_embeddings.weight), torch.tanh(self.pooler(x[:, 0]))


# --- GPT-2 (Radford et al. 2019), nanoGPT/HF layout: pre-LN, learned positions, tied lm head --------------
class _Gpt2Block(nn.Module):
    def __init__(self, hidden: int, heads: int, dropout: float):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden)
        self.attn = Attention(hidden, heads, bias=True, fused=True, dropout=dropout, causal=True)
        self.ln_2 = nn.LayerNorm(hidden)
        self.c_fc = nn.Linear(hidden, 4 * hidden)
        self.c_proj = nn.Linear(4 * hidden, hidden)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.drop(self.attn(self.ln_1(x)))
        return x + self.drop(self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh")))


class GPT2(nn.Module):
    def __init__(self, layers: int, hidden: int, heads: int, vocab: int = 50257, n_ctx: int = 1024,
                 dropout: float = 0.1):
        super().__init__()
        self.n_ctx = n_ctx
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(n_ctx, hidden)
        self.drop = nn.Dropout(dropout)
        self.h = nn.ModuleList(_Gpt2Block(hidden, heads, dropout) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)

    def init_weights(self) -> None:
        _normal_init(self)
        # GPT-2 paper: residual projections scaled by 1/sqrt(number of residual layers).
        # nn.ModuleList is not generic: to mypy its items are plain Modules.
        for block in cast("Iterable[_Gpt2Block]", self.h):
            for proj in (block.attn.out, block.c_proj):
                nn.init.normal_(proj.weight, std=0.02 / math.sqrt(2 * len(self.h)))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.drop(self.wte(tokens) + self.wpe(positions))
        for block in self.h:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)  # tied lm head


# --- LLaMA-family decoders (Touvron et al. 2023): RMSNorm, SwiGLU, rotary; GQA, tied head, qkv bias -----
class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def reset_parameters(self) -> None:
        nn.init.ones_(self.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


def _rope_tables(seq_len: int, head_dim: int, device: torch.device, base: float = 10000.0):
    inv_freq = 1.0 / base ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
    freqs = torch.outer(torch.arange(seq_len, device=device, dtype=torch.float32), inv_freq)
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def _apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    # HF "rotate half" layout; tables cast to x's dtype so SDPA sees one dtype under autocast.
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos.to(x.dtype) + torch.cat([-x2, x1], dim=-1) * sin.to(x.dtype)


class _LlamaBlock(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn: int, *, kv_heads: int, qkv_bias: bool, norm_eps: float):
        super().__init__()
        self.input_norm = RMSNorm(hidden, norm_eps)
        self.attn = Attention(hidden, heads, bias=qkv_bias, fused=False, causal=True, kv_heads=kv_heads,
                              out_bias=False)
        self.post_attention_norm = RMSNorm(hidden, norm_eps)
        self.gate = nn.Linear(hidden, ffn, bias=False)
        self.up = nn.Linear(hidden, ffn, bias=False)
        self.down = nn.Linear(ffn, hidden, bias=False)

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        x = x + self.attn(self.input_norm(x), rope)
        h = self.post_attention_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Llama(nn.Module):
    """LLaMA-family decoder, Hugging Face LlamaForCausalLM / MistralForCausalLM / Qwen2ForCausalLM layout.

    Defaults are the original LLaMA's: multi-head attention (kv_heads = heads), untied lm head, no biases. Options:
    `kv_heads` for grouped-query attention, `tie_embeddings` (the lm head reuses the token embedding: Llama-3.2
    1B/3B), `qkv_bias` (Qwen2.5), `rope_base` (rope_theta) and `norm_eps` (rms_norm_eps).
    """

    def __init__(self, layers: int, hidden: int, heads: int, ffn: int, vocab: int, *, kv_heads: int | None = None,
                 tie_embeddings: bool = False, qkv_bias: bool = False, rope_base: float = 10000.0,
                 norm_eps: float = 1e-6):
        super().__init__()
        self.heads, self.rope_base = heads, rope_base
        kv_heads = heads if kv_heads is None else kv_heads
        self.embed_tokens = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(
            _LlamaBlock(hidden, heads, ffn, kv_heads=kv_heads, qkv_bias=qkv_bias, norm_eps=norm_eps)
            for _ in range(layers)
        )
        self.norm = RMSNorm(hidden, norm_eps)
        # Tied: no lm_head module at all, so the parameter count and the largest layer are the checkpoint's.
        self.lm_head = None if tie_embeddings else nn.Linear(hidden, vocab, bias=False)

    def init_weights(self) -> None:
        _normal_init(self)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed_tokens(tokens)
        rope = _rope_tables(tokens.shape[1], x.shape[-1] // self.heads, tokens.device, self.rope_base)
        for layer in self.layers:
            x = layer(x, rope)
        x = self.norm(x)
        if self.lm_head is None:
            return F.linear(x, self.embed_tokens.weight)  # tied lm head
        return self.lm_head(x)
