// SPDX-License-Identifier: UNLICENSED
pragma solidity ^0.8.20;

interface IERC20 {
    function transferFrom(address from, address to, uint256 value) external returns (bool);
}

/// Test fixture: several token transfers from the caller in one transaction (a batch payout, a wallet's
/// multi-send), so one transaction can hold two Transfer logs of the same amount to the same wallet.
contract TestBatchTransfer {
    function transferEach(address token, address[] calldata to, uint256[] calldata value) external {
        require(to.length == value.length, "length mismatch");
        for (uint256 i = 0; i < to.length; i++) {
            require(IERC20(token).transferFrom(msg.sender, to[i], value[i]), "transfer failed");
        }
    }
}
