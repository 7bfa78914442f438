// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title Multicall3 (subset) for the local secsnap devnet.
/// @notice Base has Multicall3 at 0xcA11bde05977b3631167028862bE2a173976CA11; anvil does not.
///         The x402 EVM facilitator batches its diagnostic reads (balance, name, version,
///         authorizationState) through `tryAggregate` there, so the devnet places this
///         interface-compatible subset at the same address with `anvil_setCode`.
///         Written here rather than copied because only these two entry points are needed.
contract Multicall3 {
    struct Call {
        address target;
        bytes callData;
    }

    struct Call3 {
        address target;
        bool allowFailure;
        bytes callData;
    }

    struct Result {
        bool success;
        bytes returnData;
    }

    function tryAggregate(
        bool requireSuccess,
        Call[] calldata calls
    ) public payable returns (Result[] memory returnData) {
        returnData = new Result[](calls.length);
        for (uint256 i = 0; i < calls.length; i++) {
            (bool success, bytes memory ret) = calls[i].target.call(calls[i].callData);
            if (requireSuccess) require(success, "Multicall3: call failed");
            returnData[i] = Result(success, ret);
        }
    }

    function aggregate3(
        Call3[] calldata calls
    ) public payable returns (Result[] memory returnData) {
        returnData = new Result[](calls.length);
        for (uint256 i = 0; i < calls.length; i++) {
            (bool success, bytes memory ret) = calls[i].target.call(calls[i].callData);
            require(success || calls[i].allowFailure, "Multicall3: call failed");
            returnData[i] = Result(success, ret);
        }
    }
}
