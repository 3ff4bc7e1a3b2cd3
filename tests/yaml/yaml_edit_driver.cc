// `yaml_edit_driver FILE KEY VALUE_JSON`: SetYamlValue on FILE, the result on stdout; exit 3 with
// "refused: <why>" on stderr when the editor refuses. For yaml_edit_vs_pyyaml.py.
#include <fstream>
#include <iostream>
#include <sstream>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/plan/yaml_edit.h"

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  std::ifstream in(argv[1], std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  try {
    std::cout << pdlaunch::SetYamlValue(text.str(), argv[2], argv[3]);
  } catch (const pdlaunch::LaunchError& e) {
    std::cerr << "refused: " << e.what() << "\n";
    return 3;
  }
  return 0;
}
