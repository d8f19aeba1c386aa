#pragma once
#include <vector>

namespace fasop {

/// Per-micro-batch times of one pipeline stage.
struct StageTiming {
  double forward_s = 0;
  double backward_s = 0;
  double forward_send_s = 0;   ///< sending activations to the next stage
  double backward_send_s = 0;  ///< sending gradients to the previous stage
};

/// When each stage finishes its last backward pass.
struct PipelineResult {
  double pipeline_s = 0;            ///< end of stage 0's last backward: the pipeline's latency
  std::vector<double> stage_end_s;  ///< end of each stage's last backward
};

/// Event simulation of the 1F1B (PipeDream-flush) schedule with point-to-point sends, with
/// FASOP's dependency rules: stage i runs min(pp-i-1, m) warm-up forwards, then alternates one
/// forward and one backward, then drains its backwards. A send starts when its compute ends and
/// the receiver has posted the receive. One stage runs m micro-batches back to back.
PipelineResult simulate_1f1b(const std::vector<StageTiming>& stages, int num_microbatches);

/// One box of a simulated 1F1B timeline: a stage's forward or backward of a micro-batch, or
/// the send that follows it.
struct PipelineEvent {
  enum class Kind { kForward, kBackward, kForwardSend, kBackwardSend };
  Kind kind = Kind::kForward;
  int stage = 0;
  int microbatch = 0;
  double start_s = 0;
  double end_s = 0;
};

/// simulate_1f1b's schedule as boxes, stage by stage, each stage's in the order it runs them
/// (sends after the compute they follow), for drawing the timeline.
std::vector<PipelineEvent> simulate_1f1b_events(const std::vector<StageTiming>& stages, int num_microbatches);

/// A lower bound on simulate_1f1b's pipeline_s without simulating: the longest of some
/// dependency chains of the schedule, which the simulation can only exceed. For every stage k:
/// micro-batch 0's forwards (and sends) up to k, k's m forwards and m backwards, the last
/// micro-batch's backwards (and sends) back to stage 0; and two chains through every stage
/// once plus k's forwards, or k's backwards and steady-state forwards.
double pipeline_1f1b_lower_bound(const std::vector<StageTiming>& stages, int num_microbatches);

}  // namespace fasop
