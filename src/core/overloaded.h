// A visitor of lambdas, one per alternative of a std::variant:
//   std::visit(Overloaded{[](const A& a) {...}, [](const B& b) {...}}, v);
#pragma once

namespace baton {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace baton
