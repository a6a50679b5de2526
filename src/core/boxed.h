// Boxed<T>: an optional value kept on the heap, with value semantics (copies copy the value,
// == compares values). For fields most jobs leave empty: a Boxed costs a pointer (8 bytes) in
// each of the controller's jobs instead of the whole value (docs/performance.md, memory per
// pending job). The interface is std::optional's, for what Baton uses of it.
#pragma once

#include <memory>
#include <utility>

namespace baton {

template <class T>
class Boxed {
 public:
  Boxed() = default;
  Boxed(const T& value) : p_(std::make_unique<T>(value)) {}        // NOLINT: as std::optional
  Boxed(T&& value) : p_(std::make_unique<T>(std::move(value))) {}  // NOLINT
  Boxed(const Boxed& other) : p_(other.p_ ? std::make_unique<T>(*other.p_) : nullptr) {}
  Boxed(Boxed&&) noexcept = default;
  Boxed& operator=(const Boxed& other) {
    if (this != &other) p_ = other.p_ ? std::make_unique<T>(*other.p_) : nullptr;
    return *this;
  }
  Boxed& operator=(Boxed&&) noexcept = default;
  Boxed& operator=(const T& value) { return *this = Boxed(value); }
  Boxed& operator=(T&& value) { return *this = Boxed(std::move(value)); }

  bool has_value() const { return p_ != nullptr; }
  explicit operator bool() const { return has_value(); }
  const T& operator*() const { return *p_; }
  T& operator*() { return *p_; }
  const T* operator->() const { return p_.get(); }
  T* operator->() { return p_.get(); }
  T value_or(T fallback) const { return p_ ? *p_ : std::move(fallback); }
  void reset() { p_.reset(); }

  friend bool operator==(const Boxed& a, const Boxed& b) {
    return a.p_ == nullptr ? b.p_ == nullptr : b.p_ != nullptr && *a.p_ == *b.p_;
  }

 private:
  std::unique_ptr<T> p_;
};

}  // namespace baton
