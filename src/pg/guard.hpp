// The boundary between PostgreSQL's longjmp errors and C++ exceptions.
//
// PostgreSQL reports errors with siglongjmp, which skips C++ destructors; C++ reports them with
// exceptions, which PostgreSQL cannot catch. Two tools keep them apart:
//
//  - pg::guarded(f) runs a PostgreSQL call while C++ objects with destructors are alive; an
//    ereport(ERROR) inside it becomes a pg::Error exception carrying the original ErrorData.
//  - pg::run_cpp(f) runs C++ code from PostgreSQL's world (an SQL function, a C-style caller):
//    any exception comes back as ereport(ERROR), raised once every C++ object of f is
//    destroyed, with the original SQLSTATE when it was a pg::Error.
//
// A pg::Error must reach run_cpp, and is never caught and continued: guarded() has taken the
// error off PostgreSQL's error stack, but the transaction (or subtransaction) it interrupted is
// still to be aborted, with its locks, buffers and resource owners as the error left them. Code
// that carried on after catching it would go on in a failed transaction with the error gone. A
// handler may clean up its own C++ state and rethrow (`throw;`), nothing else.
#pragma once

extern "C" {
#include "postgres.h"
#include "utils/elog.h"
#include "utils/memutils.h"
}

#include <exception>
#include <new>
#include <type_traits>
#include <utility>

namespace pg {

// A PostgreSQL error caught by guarded(), rethrown intact by run_cpp(): never caught and
// continued (above).
class Error : public std::exception {
  public:
    explicit Error(ErrorData* data) : data_(data) {}
    ErrorData* data() const { return data_; }
    const char* what() const noexcept override { return data_->message; }

  private:
    ErrorData* data_;  // palloc'd in the memory context that was current at the call
};

namespace detail {
// PG_TRY installs its jump buffer as PG_exception_stack and restores it in PG_END_TRY, which a
// C++ exception thrown inside skips. This puts back what was there, on every way out.
class ErrorStackRestorer {
  public:
    ErrorStackRestorer()
        : exception_stack_(PG_exception_stack), context_stack_(error_context_stack) {}
    ~ErrorStackRestorer() {
        PG_exception_stack = exception_stack_;
        error_context_stack = context_stack_;
    }
    ErrorStackRestorer(const ErrorStackRestorer&) = delete;
    ErrorStackRestorer& operator=(const ErrorStackRestorer&) = delete;

  private:
    sigjmp_buf* exception_stack_;
    ErrorContextCallback* context_stack_;
};
}  // namespace detail

template <typename F>
auto guarded(F&& call) -> decltype(call()) {
    using Result = decltype(call());
    static_assert(std::is_void<Result>::value || std::is_trivially_copyable<Result>::value,
                  "guarded() returns plain values: pointers, Datums, scalars");
    MemoryContext caller_context = CurrentMemoryContext;
    detail::ErrorStackRestorer restorer;
    ErrorData* volatile error = nullptr;  // assigned in PG_CATCH, read after the longjmp
    // volatile: assigned inside PG_TRY and read after a possible longjmp
    typename std::conditional<std::is_void<Result>::value, int, Result>::type volatile result{};

    PG_TRY();
    {
        if constexpr (std::is_void<Result>::value)
            call();
        else
            result = call();
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(caller_context);
        error = CopyErrorData();
        FlushErrorState();
    }
    PG_END_TRY();

    if (error != nullptr) throw Error(error);
    if constexpr (!std::is_void<Result>::value) return result;
}

namespace detail {
// What survives the catch block: copied out so that ereport runs with no exception alive.
struct PendingError {
    ErrorData* postgres = nullptr;
    int sqlstate = 0;
    const char* message = nullptr;
};

// Copies a message into static storage without calling anything that can ereport.
const char* keep_message(const char* message) noexcept;

[[noreturn]] void raise(const PendingError& pending);
}  // namespace detail

template <typename F>
auto run_cpp(F&& body) -> decltype(body()) {
    detail::PendingError pending;
    try {
        return body();
    } catch (const Error& e) {
        pending.postgres = e.data();
    } catch (const std::bad_alloc&) {
        pending.sqlstate = ERRCODE_OUT_OF_MEMORY;
        pending.message = "out of memory";
    } catch (const std::exception& e) {
        pending.sqlstate = ERRCODE_INTERNAL_ERROR;
        pending.message = detail::keep_message(e.what());
    }
    detail::raise(pending);
}

}  // namespace pg
