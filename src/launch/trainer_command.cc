#include "launch/trainer_command.h"

#include "emit/megatron_args.h"
#include "emit/shell_quote.h"

namespace fasop {

std::string megatron_trainer_command(const PlanFile& plan, const ModelSpec& model, const std::string& script) {
  std::string command =
      "torchrun --nnodes \"$NNODES\" --nproc-per-node \"$GPUS_PER_NODE\" --node-rank \"$NODE_RANK\" "
      "--master-addr \"$MASTER_ADDR\" --master-port \"$MASTER_PORT\" " + shell_quote(script);
  for (const std::string& token : megatron_args(plan, model, MegatronFlavor::kUpstream)) command += " " + shell_quote(token);
  return command;
}

}  // namespace fasop
