// The `actrain` command. Everything is in actrain_app (run_actrain), so a test binary can run
// the same commands with models or optimizers of its own registered.
#include "apps/commands.hpp"

int main(int argc, char** argv) {
  return actrain::run_actrain(argc, argv);
}
