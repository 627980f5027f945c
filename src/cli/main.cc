// kubectl-berth: the kubectl plugin of berth ("kubectl berth ..." once it is on PATH).

#include <iostream>
#include <string>
#include <vector>

#include "cli/app.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return berth::cli::Main(args, std::cin, std::cout, std::cerr);
}
