#include "launch/trainer_command.h"

#include "emit/shell_quote.h"

namespace fasop {

std::string torchrun_prefix() {
  // torchrun's underscore spellings: every version takes them (1.13, Debian 12's, knows no others).
  return "torchrun --nnodes \"$NNODES\" --nproc_per_node \"$GPUS_PER_NODE\" --node_rank \"$NODE_RANK\" "
         "--master_addr \"$MASTER_ADDR\" --master_port \"$MASTER_PORT\"";
}

std::string torchrun_script_command(const std::vector<std::string>& args, const std::string& script) {
  std::string command = torchrun_prefix() + " " + shell_quote(script);
  for (const std::string& token : args) command += " " + shell_quote(token);
  return command;
}

}  // namespace fasop
