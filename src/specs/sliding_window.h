#pragma once
// Sliding-window attention (GPT-OSS, Mistral, Gemma): which layers attend to a window of the
// tokens before each query instead of all of them, and the share of the score matrix a layer
// computes either way, which the cost model prices.

namespace fasop {

/// Sliding-window attention as Megatron-Core runs it (--window-size tokens,0 with
/// --window-attn-skip-freq full_every): in a windowed layer each query attends to itself and
/// the `tokens` tokens before it; every `full_every`-th layer (1-based, as Megatron numbers
/// them) keeps full causal attention, none where full_every is 0. GPT-OSS: 128 tokens, every
/// other layer full. tokens == 0: no window.
struct SlidingWindow {
  int tokens = 0;
  int full_every = 0;

  bool enabled() const { return tokens > 0; }
  /// Whether transformer layer `layer_number` (1-based) attends through the window, as
  /// Megatron-Core's is_layer_window_attention decides.
  bool windows_layer(int layer_number) const {
    return enabled() && (full_every == 0 || layer_number % full_every != 0);
  }
};

/// The share of the sequence x sequence score matrix that causal attention computes, each query
/// meeting itself and up to `window` tokens before it (window 0: all of them). Without a window
/// it is the half that fused kernels are priced at; with one, (w (w + 1) / 2 + (s - w) (w + 1))
/// / s^2 pairs (GPT-OSS at 4,096 tokens and a window of 128: 3.1%).
double causal_pair_share(int sequence, int window);

}  // namespace fasop
