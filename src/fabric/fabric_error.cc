#include "fabric/fabric_error.h"

#include <rdma/fi_errno.h>

#include <cerrno>
#include <cstdlib>

#include "fabric/libfabric_api.h"

namespace writ::fabric {

std::string FabricErrorName(int fi_errno) {
  switch (fi_errno) {
    case 0: return "success";
    case FI_EPERM: return "FI_EPERM";
    case FI_ENOENT: return "FI_ENOENT";
    case FI_EINTR: return "FI_EINTR";
    case FI_EIO: return "FI_EIO";
    case FI_E2BIG: return "FI_E2BIG";
    case FI_EBADF: return "FI_EBADF";
    case FI_EAGAIN: return "FI_EAGAIN";
    case FI_ENOMEM: return "FI_ENOMEM";
    case FI_EACCES: return "FI_EACCES";
    case FI_EFAULT: return "FI_EFAULT";
    case FI_EBUSY: return "FI_EBUSY";
    case FI_ENODEV: return "FI_ENODEV";
    case FI_EINVAL: return "FI_EINVAL";
    case FI_EMFILE: return "FI_EMFILE";
    case FI_ENOSPC: return "FI_ENOSPC";
    case FI_ENOSYS: return "FI_ENOSYS";
    case FI_ENOMSG: return "FI_ENOMSG";
    case FI_ENODATA: return "FI_ENODATA";
    case FI_EOVERFLOW: return "FI_EOVERFLOW";
    case FI_EMSGSIZE: return "FI_EMSGSIZE";
    case FI_ENOPROTOOPT: return "FI_ENOPROTOOPT";
    case FI_EOPNOTSUPP: return "FI_EOPNOTSUPP";
    case FI_EADDRINUSE: return "FI_EADDRINUSE";
    case FI_EADDRNOTAVAIL: return "FI_EADDRNOTAVAIL";
    case FI_ENETDOWN: return "FI_ENETDOWN";
    case FI_ENETUNREACH: return "FI_ENETUNREACH";
    case FI_ECONNABORTED: return "FI_ECONNABORTED";
    case FI_ECONNRESET: return "FI_ECONNRESET";
    case FI_ENOBUFS: return "FI_ENOBUFS";
    case FI_EISCONN: return "FI_EISCONN";
    case FI_ENOTCONN: return "FI_ENOTCONN";
    case FI_ESHUTDOWN: return "FI_ESHUTDOWN";
    case FI_ETIMEDOUT: return "FI_ETIMEDOUT";
    case FI_ECONNREFUSED: return "FI_ECONNREFUSED";
    case FI_EHOSTDOWN: return "FI_EHOSTDOWN";
    case FI_EHOSTUNREACH: return "FI_EHOSTUNREACH";
    case FI_EALREADY: return "FI_EALREADY";
    case FI_EINPROGRESS: return "FI_EINPROGRESS";
    case FI_EREMOTEIO: return "FI_EREMOTEIO";
    case FI_ECANCELED: return "FI_ECANCELED";
    case FI_EKEYREJECTED: return "FI_EKEYREJECTED";
    case FI_EOTHER: return "FI_EOTHER";
    case FI_ETOOSMALL: return "FI_ETOOSMALL";
    case FI_EOPBADSTATE: return "FI_EOPBADSTATE";
    case FI_EAVAIL: return "FI_EAVAIL";
    case FI_EBADFLAGS: return "FI_EBADFLAGS";
    case FI_ENOEQ: return "FI_ENOEQ";
    case FI_EDOMAIN: return "FI_EDOMAIN";
    case FI_ENOCQ: return "FI_ENOCQ";
    case FI_ECRC: return "FI_ECRC";
    case FI_ETRUNC: return "FI_ETRUNC";
    case FI_ENOKEY: return "FI_ENOKEY";
    case FI_ENOAV: return "FI_ENOAV";
    case FI_EOVERRUN: return "FI_EOVERRUN";
    default: return "FI_E" + std::to_string(fi_errno);
  }
}

Status FabricStatus(long rc, std::string_view operation) {
  const int err = static_cast<int>(std::labs(rc));
  ErrorCode code = ErrorCode::kTransport;
  switch (err) {
    case FI_ENODATA:
    case FI_ENOSYS:
    case FI_EOPNOTSUPP:
    case FI_EBADFLAGS: code = ErrorCode::kUnsupported; break;
    case FI_EINVAL: code = ErrorCode::kInvalidArgument; break;
    case FI_ETIMEDOUT: code = ErrorCode::kTimeout; break;
    case FI_ECANCELED: code = ErrorCode::kCancelled; break;
    default: break;
  }
  std::string msg(operation);
  msg += ": ";
  msg += LibfabricStrerror(err);
  msg += " (" + FabricErrorName(err) + ")";
  return Status::Fabric(code, std::move(msg), err);
}

}  // namespace writ::fabric
